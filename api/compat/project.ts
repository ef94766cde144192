import type { Request } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import { resolveProject } from '../auth/resolveProject.ts';

/**
 * The project a compatible API's call is billed against: a foreign body has no projectId, so a key
 * spanning several projects names one in a header (OpenAI-Project, which the OpenAI SDK sends for
 * its `project` option), checked against the key's scope as a body's projectId is.
 * @throws AppError api_key_project_scope, project_id_required.
 */
export function compatProject(req: Request, header: string): string {
  const named = req.get(header);
  const projects = req.principal!.projects;
  if (named === undefined && projects.length > 1) {
    throw new AppError(
      'project_id_required',
      `This key can reach several projects: name one in the ${header} header.`,
    );
  }
  if (named === undefined) return resolveProject(req);
  if (!projects.some((p) => p.id === named)) {
    throw new AppError('api_key_project_scope', `Project '${named}' is outside this key's scope.`);
  }
  req.res!.locals.projectId = named;
  return named;
}
