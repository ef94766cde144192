import type { RequestHandler } from 'express';

import { findWorkspaceJob } from '../../../shared/db/queries/jobs.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toJobDto } from '../../../shared/jobs/jobDto.ts';
import { isJobType, jobSpecs } from '../../../shared/jobs/specs.ts';
import type { AppDeps } from '../../deps.ts';

export function getJob({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const jobId = req.params.jobId as string;
    const job = await findWorkspaceJob(pool, req.principal!.workspaceId, jobId);
    // Internal jobs (a synchronous generation, a task reply) are not public records.
    if (!job || !isJobType(job.type) || !jobSpecs[job.type].isPublic) throw errors.notFound('job', jobId);
    res.json({ job: toJobDto(job) });
  };
}
