import type { WorkerUtils } from 'graphile-worker';
import type { DatabasePool } from 'slonik';

import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { ObjectStore } from '../shared/objectStore.ts';
import type { NotificationHub } from '../shared/pubsub.ts';
import type { ByteBudget } from './byteBudget.ts';

/** What every task of this worker process may use. */
export type WorkerContext = {
  config: Config;
  pool: DatabasePool;
  hub: NotificationHub;
  logger: Logger;
  objectStore: ObjectStore;
  /** Bytes of uploaded inputs (audio, images) held in memory at once; see withInputObject. */
  inputMemory: ByteBudget;
  /** graphile-worker's public utilities (maintenance runs its `cleanup`, never SQL on its tables). */
  workerUtils: Pick<WorkerUtils, 'cleanup'>;
};
