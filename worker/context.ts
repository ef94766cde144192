import type { WorkerUtils } from 'graphile-worker';
import type { DatabasePool } from 'slonik';

import type { Config } from '../shared/config/config.ts';
import type { RunningJobRow, UnbilledOutcome } from '../shared/db/queries/jobs.ts';
import type { Logger } from '../shared/observability/logger.ts';
import type { OcrProvider, Providers } from '../shared/providers/types.ts';
import type { KeyedChannel, NotificationHub } from '../shared/realtime/pubsub.ts';
import type { ObjectStore } from '../shared/storage/objectStore.ts';
import type { ByteBudget } from './byteBudget.ts';
import type { DeferredFinishes } from './deferredFinishes.ts';
import type { JobMetrics } from './metrics/jobMetrics.ts';
import type { ProviderMetrics } from './metrics/providerMetrics.ts';
import type { DeckRenderer } from './render/deckRenderer.ts';

/** What every task of this worker process may use; built once by startWorker. */
export type WorkerContext = {
  config: Config;
  pool: DatabasePool;
  hub: NotificationHub;
  logger: Logger;
  objectStore: ObjectStore;
  /** Bytes of uploaded inputs (audio, images) held in memory at once; see withInputObject. */
  inputMemory: ByteBudget;
  /** The models for a key mode: fixtures for test keys, the configured provider for live keys. */
  providers(livemode: boolean): Providers;
  /**
   * The status probe's OCR engine, apart from the jobs' engines: a backlog of OCR jobs (each up to
   * OCR_TIMEOUT_MS) must not make the probe wait, or the status page would report an outage that is a queue.
   */
  probeOcr: OcrProvider;
  /** The process's headless browser for deck renders (launched on first use, closed by close()). */
  deckRenderer: DeckRenderer;
  /** The api's requests to stop a running job, by job id. */
  cancellations: KeyedChannel<'jobs:cancel'>;
  /** Deliveries queued, by webhook endpoint (a job draining the endpoint waits on these). */
  webhookArrivals: KeyedChannel<'webhooks:due'>;
  /**
   * Marks a job running and reads it (null when it already finished); concurrent starts share one
   * statement.
   */
  markRunning(jobId: string): Promise<RunningJobRow | null>;
  /** As markRunning without the mark, for jobs nobody watches run (see marksRunning). */
  readUnfinished(jobId: string): Promise<RunningJobRow | null>;
  /**
   * Finishes (and meters at zero) a job that holds nothing and announces nothing; concurrent calls
   * share one statement. True when this call finished it (false: an earlier attempt had).
   */
  finishUnbilled(outcome: UnbilledOutcome): Promise<boolean>;
  /** Finishes of inline jobs, written after their queue jobs are let go (see DeferredFinishes). */
  inlineFinishes: DeferredFinishes;
  /** Releases what the context holds of its own (the OCR engines' threads, the browser); the pool and hub are the caller's. */
  close(): Promise<void>;
  /** Durations of provider calls and webhook deliveries; absent where nothing serves metrics (tests). */
  providerMetrics?: ProviderMetrics;
  /** Records how a queue job that ends without an error really ended (worker/metrics/jobMetrics.ts). */
  jobOutcomes?: Pick<JobMetrics, 'note'>;
  /** graphile-worker's public utilities (maintenance runs its `cleanup`, never SQL on its tables). */
  workerUtils: Pick<WorkerUtils, 'cleanup'>;
};
