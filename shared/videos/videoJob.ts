import { apiBasePath } from '../config/config.ts';
import { type Prices, videoCost } from '../config/prices.ts';
import type { JobRow } from '../db/queries/jobs.ts';
import { insertVideo, type VideoRow } from '../db/queries/videos.ts';
import { type BilledJobDeps, type JobCaller, startBilledJob } from '../jobs/billedJob.ts';
import type { VideoJobInput } from '../jobs/generationInputs.ts';
import { toVideoDto } from './dto.ts';
import { newVideo } from './videoRequest.ts';

/** The 202 of POST /videos (also what an Idempotency-Key replays). */
export function videoAnswer(video: VideoRow, job: JobRow) {
  return {
    status: 202,
    body: { video: toVideoDto(video), jobId: job.id },
    location: `${apiBasePath}/jobs/${job.id}`,
  };
}

/**
 * A live video: its row, generating, and the job that renders it, created with the credit hold of
 * the requested length's maximum cost (and the Idempotency-Key record) in one transaction.
 */
export async function startVideoJob(
  deps: Pick<BilledJobDeps, 'pool' | 'jobs' | 'idempotency'> & { prices: Prices },
  caller: JobCaller,
  at: { workspaceId: string; taskId: string; projectId: string },
  input: VideoJobInput,
): Promise<ReturnType<typeof videoAnswer>> {
  let video: VideoRow | undefined;
  const job = await startBilledJob(
    deps,
    caller,
    {
      type: 'video.generate',
      projectId: at.projectId,
      input,
      maxCostMinor: videoCost(deps.prices, input.durationSeconds),
      alsoWrite: async (tx, created) => {
        video = await insertVideo(tx, newVideo(input, { ...at, jobId: created.id, livemode: true }));
      },
    },
    (created) => videoAnswer(video!, created),
  );
  return videoAnswer(video!, job);
}
