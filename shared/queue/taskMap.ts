import { z } from 'zod';

import { traceCarrier } from '../observability/traceContext.ts';

/**
 * Every graphile-worker task and its payload, in one place. Feature modules and the worker import
 * payload schemas from here (never the other way round), `enqueue` and the worker's task list are
 * typed by it, and each task parses its payload with the schema first thing: the queue holds JSON
 * written by whichever version enqueued it, so a shape only ever gains optional fields.
 */

/**
 * What the worker needs of an unbilled synchronous job (test keys) that its row does not hold: no
 * hold to settle, no money to move, no public status to show, so the job starts from its payload
 * without reading or marking the row (one statement less on the hot path; the prompt never lands in
 * `jobs`). Only what the run reads travels: the queue writes every payload byte to the write-ahead
 * log twice (added, then locked), and the finish takes the ids it meters from the row it updates.
 * Payloads added by earlier releases also carry those ids; parsing drops them.
 */
const inlineJob = z.object({
  type: z.string(),
  input: z.record(z.string(), z.unknown()),
});
export type InlineJob = z.infer<typeof inlineJob>;

/** Payload of every job task: the job's id; the row holds the rest, except for inline jobs. */
export const jobPayload = z.object({
  jobId: z.string(),
  inline: inlineJob.optional(),
  trace: traceCarrier.optional(),
});
export type JobPayload = z.infer<typeof jobPayload>;

/** `webhook__deliver`: one attempt of one delivery. */
export const webhookDeliverPayload = z.object({
  deliveryId: z.string(),
  attempt: z.int().min(1),
  trace: traceCarrier.optional(),
});
export type WebhookDeliverPayload = z.infer<typeof webhookDeliverPayload>;

/** `brain__synthesize`: the task whose brain page to (re)write. */
export const brainSynthesizePayload = z.object({ taskId: z.string().min(1) });
export type BrainSynthesizePayload = z.infer<typeof brainSynthesizePayload>;

/** `files__parse`: the uploaded file to read as a native document. */
export const filesParsePayload = z.object({ fileId: z.string().min(1) });
export type FilesParsePayload = z.infer<typeof filesParsePayload>;

/** Tasks the crontab starts carry nothing. */
type NoPayload = Record<string, never>;

declare global {
  namespace GraphileWorker {
    interface Tasks {
      text__generate: JobPayload;
      images__generate: JobPayload;
      embeddings__create: JobPayload;
      transcriptions__create: JobPayload;
      ocr__extract: JobPayload;
      video__generate: JobPayload;
      deck__export: JobPayload;
      task__reply: JobPayload;
      webhook__deliver: WebhookDeliverPayload;
      brain__synthesize: BrainSynthesizePayload;
      files__parse: FilesParsePayload;
      status__probe: NoPayload;
      maintenance__prune: NoPayload;
      jobs__reconcile: NoPayload;
      uploads__sweep: NoPayload;
    }
  }
}

export type TaskName = keyof GraphileWorker.Tasks;
