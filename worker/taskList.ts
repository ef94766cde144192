import type { TaskList } from 'graphile-worker';

import type { WorkerContext } from './context.ts';
import { embeddingsCreate } from './tasks/embeddings__create.ts';
import { imagesGenerate } from './tasks/images__generate.ts';
import { maintenancePrune } from './tasks/maintenance__prune.ts';
import { ocrExtract } from './tasks/ocr__extract.ts';
import { statusProbe } from './tasks/status__probe.ts';
import { taskReply } from './tasks/task__reply.ts';
import { textGenerate } from './tasks/text__generate.ts';
import { transcriptionsCreate } from './tasks/transcriptions__create.ts';
import { webhookDeliver } from './tasks/webhook__deliver.ts';

/** Task identifier (= file name) → task. Each capability adds its tasks here. */
export function makeTaskList(ctx: WorkerContext): TaskList {
  return {
    status__probe: statusProbe(ctx),
    maintenance__prune: maintenancePrune(ctx),
    text__generate: textGenerate(ctx),
    images__generate: imagesGenerate(ctx),
    embeddings__create: embeddingsCreate(ctx),
    transcriptions__create: transcriptionsCreate(ctx),
    ocr__extract: ocrExtract(ctx),
    task__reply: taskReply(ctx),
    webhook__deliver: webhookDeliver(ctx),
  };
}
