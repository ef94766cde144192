import type { DatabasePool } from 'slonik';

import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { ObjectStore } from '../shared/objectStore.ts';
import type { NotificationHub } from '../shared/pubsub.ts';
import type { CredentialResolver } from './auth/authenticate.ts';
import type { KeyCache } from './auth/keyCache.ts';
import type { JobWaiter } from './jobWaiter.ts';
import type { ApiDocument } from './openapi/document.ts';
import type { RateLimiter } from './rateLimiter.ts';
import type { RequestLogWriter } from './requestLog.ts';
import type { TaskStreamOptions } from './sse/taskStream.ts';
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
  jobWaiter: JobWaiter;
  objectStore: ObjectStore;
  /** Streamed uploads being received by this process and the bytes they hold. */
  uploads: UploadGauge;
  credentialResolvers: CredentialResolver[];
  /** Task stream hold and heartbeat times; tests and benches shorten them (default: 60 s hold). */
  taskStream?: Partial<TaskStreamOptions>;
  keyCache: KeyCache;
  /** Aborts when the process begins to shut down: open streams end (with `done`) instead of holding on. */
  shutdown: AbortSignal;
};
