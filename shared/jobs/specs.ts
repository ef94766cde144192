/**
 * Every job type: the graphile-worker task that runs it, how often it is tried, and whether it is a
 * public job (readable through GET /jobs/{jobId} and announced as job.succeeded / job.failed).
 * Synchronous jobs hand their result to the waiting request once and then drop it.
 */
export const jobSpecs = {
  'text.generate': { task: 'text__generate', maxAttempts: 3, priority: 0, isPublic: false, isSync: true },
  'images.generate': { task: 'images__generate', maxAttempts: 3, priority: 0, isPublic: false, isSync: true },
  'embeddings.create': {
    task: 'embeddings__create',
    maxAttempts: 3,
    priority: 0,
    isPublic: false,
    isSync: true,
  },
  'transcriptions.create': {
    task: 'transcriptions__create',
    maxAttempts: 3,
    priority: 0,
    isPublic: false,
    isSync: true,
  },
  'ocr.extract': { task: 'ocr__extract', maxAttempts: 3, priority: 1, isPublic: true, isSync: false },
  'video.generate': { task: 'video__generate', maxAttempts: 3, priority: 2, isPublic: true, isSync: false },
  'deck.export': { task: 'deck__export', maxAttempts: 3, priority: 2, isPublic: true, isSync: false },
  'task.reply': { task: 'task__reply', maxAttempts: 5, priority: 0, isPublic: false, isSync: false },
} as const;

export type JobType = keyof typeof jobSpecs;

const typeOfTask = new Map<string, JobType>(
  Object.entries(jobSpecs).map(([type, spec]) => [spec.task, type as JobType]),
);

/** The job type a graphile-worker task identifier runs, if it runs one. */
export function jobTypeOfTask(identifier: string): JobType | undefined {
  return typeOfTask.get(identifier);
}

/**
 * Whether a worker marks a job `running` when it starts it: an asynchronous job's run is watched
 * (GET /jobs/{jobId} shows it; a task's replies are ordered by it) and may last minutes. A
 * synchronous job's only watcher is its caller, waiting on the request for the end, so the mark
 * would be a write per job that nobody reads.
 */
export function marksRunning(type: JobType | undefined): boolean {
  return type === undefined || !jobSpecs[type].isSync;
}

export function isJobType(value: string): value is JobType {
  return Object.hasOwn(jobSpecs, value);
}
