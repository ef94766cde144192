import type { Registry } from 'prom-client';
import type { DatabasePool } from 'slonik';

import type { Config } from '../shared/config/config.ts';
import type { JobCreator } from '../shared/jobs/createJob.ts';
import type { JobWaiter } from '../shared/jobs/jobWaiter.ts';
import type { OauthOptions } from '../shared/oauth/oauthOptions.ts';
import type { Logger } from '../shared/observability/logger.ts';
import type { NotificationHub } from '../shared/realtime/pubsub.ts';
import type { ObjectStore } from '../shared/storage/objectStore.ts';
import type { StreamLeases } from '../shared/streams/streamLeases.ts';
import type { CredentialResolver } from './auth/authenticate.ts';
import type { FailedAuthLimiter } from './auth/failedAuthLimiter.ts';
import type { KeyCache } from './auth/keyCache.ts';
import type { RateLimiter } from './auth/rateLimiter.ts';
import type { CursorKeys } from './http/cursor.ts';
import type { RequestIdempotency } from './idempotency/requestIdempotency.ts';
import type { ApiDocument } from './openapi/document.ts';
import type { RequestLogWriter } from './requestLog/requestLogWriter.ts';
import type { OpenStreams } from './sse/openStreams.ts';
import type { TaskReplyFeed } from './sse/taskReplyFeed.ts';
import type { TaskStreamOptions } from './sse/taskStream.ts';
import type { TextDeltaRelay } from './sse/textDeltaRelay.ts';
import type { TextStreamOptions } from './sse/textStreamOptions.ts';
import type { StatusSnapshots } from './status/statusSnapshots.ts';
import type { UploadGauge } from './uploads/uploadGauge.ts';

/** Everything the HTTP tier needs, built once per process (or per test file). */
export type AppDeps = {
  config: Config;
  pool: DatabasePool;
  hub: NotificationHub;
  logger: Logger;
  doc: ApiDocument;
  rateLimiter: RateLimiter;
  requestLog: RequestLogWriter;
  /**
   * This process's metrics (GET /metrics): default process metrics, API calls, streams, pools, the
   * fleet's queue. None with METRICS=off.
   */
  metrics: Registry | undefined;
  jobWaiter: JobWaiter;
  objectStore: ObjectStore;
  /** Streamed uploads being received by this process and the bytes they hold. */
  uploads: UploadGauge;
  credentialResolvers: CredentialResolver[];
  /**
   * This process's cache of access-token lookups. The OAuth endpoints empty it themselves after
   * ending tokens, so the very next call here sees it; other processes hear auth:changed.
   */
  accessTokenCache?: { clear(): void };
  /** Task stream hold, heartbeat and stall times; tests and benches shorten them (default: 60 s hold). */
  taskStream?: Partial<TaskStreamOptions>;
  /** Streaming POST /text keep-alive and stall times; tests shorten them. */
  textStream?: Partial<TextStreamOptions>;
  /** The per-workspace limit on open streams, shared by every api process. */
  streamLeases: StreamLeases;
  /** The event streams this process has open, by kind (svc_sse_streams). */
  openStreams: OpenStreams;
  keyCache: KeyCache;
  /** Refuses client addresses that keep failing authentication, before any key lookup. */
  failedAuth: FailedAuthLimiter;
  /** Creates jobs; concurrent inline jobs share one statement. */
  jobs: JobCreator;
  /** Assistant replies fanned out to this process's task streams. */
  taskReplyFeed: TaskReplyFeed;
  /** Text deltas fanned out to this process's text streams. */
  textDeltas: TextDeltaRelay;
  /** The key task cursors are signed with. */
  cursorKeys: CursorKeys;
  /** Idempotency-Key answers, recorded with the work they describe. */
  idempotency: RequestIdempotency;
  /** GET /status's snapshot, shared by every api process. */
  status: StatusSnapshots;
  /** The OAuth server's clock, refresh grace window and sign-in limits; tests change them (defaults: real time, 30 s, 10/100 per 15 min). */
  oauth?: OauthOptions;
  /** Aborts when the process begins to shut down: open streams end (with `done`) instead of holding on. */
  shutdown: AbortSignal;
};
