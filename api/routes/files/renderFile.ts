import type { RequestHandler } from 'express';

import { apiBasePath } from '../../../shared/config/config.ts';
import { findWorkspaceFile } from '../../../shared/db/queries/files.ts';
import { AppError, found } from '../../../shared/errors/appError.ts';
import { toJobDto } from '../../../shared/jobs/jobDto.ts';
import type { AppDeps } from '../../deps.ts';

/**
 * POST /files/{fileId}/render: queues a deck.export job (not billed, so nothing is held). The job
 * is created even when the deck's PDF is current; the worker then succeeds without rendering.
 */
export function renderFile(deps: AppDeps): RequestHandler {
  return async (req, res) => {
    const principal = req.principal!;
    const fileId = req.params.fileId as string;
    const file = found(await findWorkspaceFile(deps.pool, principal.workspaceId, fileId), 'file', fileId);
    if (file.kind !== 'deck') {
      throw new AppError(
        'unsupported_export_format',
        `A file of kind ${file.kind} cannot be rendered; only decks can.`,
      );
    }
    // Nothing is billed, so no project is required; a single-project key's project labels the job's events.
    const projectId = principal.projects.length === 1 ? principal.projects[0]!.id : null;
    await deps.idempotency.answerFromTransaction(req, res, 202, async (tx) => {
      const job = await deps.jobs.create(tx, {
        workspaceId: principal.workspaceId,
        projectId,
        keyId: principal.keyId,
        oauthAppId: principal.oauthAppId,
        type: 'deck.export',
        livemode: principal.livemode,
        input: { fileId: file.id },
        holdId: null,
        requestId: req.requestId,
      });
      return { body: { job: toJobDto(job) }, location: `${apiBasePath}/jobs/${job.id}` };
    });
  };
}
