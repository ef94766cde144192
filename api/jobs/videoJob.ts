import type { Request } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import { type Prices, videoCost } from '../../shared/config/prices.ts';
import type { JobRow } from '../../shared/db/queries/jobs.ts';
import { insertVideo, type VideoRow } from '../../shared/db/queries/videos.ts';
import { type BilledJobDeps, startBilledJob } from '../../shared/jobs/billedJob.ts';
import type { VideoJobInput } from '../../shared/jobs/generationInputs.ts';
import { toVideoDto } from '../../shared/videos/dto.ts';
import { newVideo } from '../../shared/videos/videoRequest.ts';

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
  req: Request,
  at: { workspaceId: string; taskId: string; projectId: string },
  input: VideoJobInput,
): Promise<ReturnType<typeof videoAnswer>> {
  let video: VideoRow | undefined;
  const job = await startBilledJob(
    deps,
    req,
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
