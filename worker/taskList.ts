import type { Task, TaskList } from 'graphile-worker';

import { jobSpecs, type JobType } from '../shared/jobs/specs.ts';
import type { WorkerContext } from './context.ts';
import { type AnyJobDefinition, type JobDefinitions, runJob } from './jobEngine.ts';
import type { Probe } from './probes.ts';
import { brainSynthesize } from './tasks/brain__synthesize.ts';
import { deckExport } from './tasks/deck__export.ts';
import { embeddingsCreate } from './tasks/embeddings__create.ts';
import { filesParse } from './tasks/files__parse.ts';
import { imagesGenerate } from './tasks/images__generate.ts';
import { jobsReconcile } from './tasks/jobs__reconcile.ts';
import { maintenancePrune } from './tasks/maintenance__prune.ts';
import { ocrExtract } from './tasks/ocr__extract.ts';
import { statusProbe } from './tasks/status__probe.ts';
import { taskReply } from './tasks/task__reply.ts';
import { textGenerate } from './tasks/text__generate.ts';
import { transcriptionsCreate } from './tasks/transcriptions__create.ts';
import { uploadsSweep } from './tasks/uploads__sweep.ts';
import { videoGenerate } from './tasks/video__generate.ts';
import { webhookDeliver } from './tasks/webhook__deliver.ts';
import { tracedTask } from './tracing/tracedTask.ts';

/** What each job type (shared/jobs/specs.ts) adds to the job engine. Each capability adds its types here. */
export function makeJobDefinitions(ctx: WorkerContext): JobDefinitions {
  return {
    'text.generate': textGenerate(ctx),
    'images.generate': imagesGenerate(ctx),
    'embeddings.create': embeddingsCreate(ctx),
    'transcriptions.create': transcriptionsCreate(ctx),
    'ocr.extract': ocrExtract(ctx),
    'video.generate': videoGenerate(ctx),
    'task.reply': taskReply(ctx),
    'deck.export': deckExport(ctx),
  };
}

/** The graphile-worker task that runs jobs of one definition through the job engine. */
export function jobTask(ctx: WorkerContext, definition: AnyJobDefinition): Task {
  return (payload, helpers) => runJob(ctx, definition, payload, helpers);
}

/**
 * Task identifier (= file name) → task: every job type's task, and the platform's own tasks; each in
 * a span continuing its job's trace when tracing is on.
 */
export function makeTaskList(
  ctx: WorkerContext,
  definitions: JobDefinitions,
  probes: ReadonlyMap<string, Probe>,
): TaskList {
  const tasks = platformTasks(ctx, definitions, probes);
  if (!ctx.config.tracing) return tasks;
  return Object.fromEntries(
    Object.entries(tasks).map(([identifier, task]) => [identifier, tracedTask(identifier, task as Task)]),
  );
}

function platformTasks(
  ctx: WorkerContext,
  definitions: JobDefinitions,
  probes: ReadonlyMap<string, Probe>,
): TaskList {
  const jobTasks = Object.entries(definitions).map(([type, definition]) => [
    jobSpecs[type as JobType].task,
    jobTask(ctx, definition),
  ]);
  return {
    ...Object.fromEntries(jobTasks),
    status__probe: statusProbe(ctx, probes),
    maintenance__prune: maintenancePrune(ctx),
    jobs__reconcile: jobsReconcile(ctx, definitions),
    webhook__deliver: webhookDeliver(ctx),
    brain__synthesize: brainSynthesize(ctx),
    uploads__sweep: uploadsSweep(ctx),
    files__parse: filesParse(ctx),
  };
}
