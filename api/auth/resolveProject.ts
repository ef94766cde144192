import type { Request } from 'express';

import { AppError } from '../../shared/errors/appError.ts';

/**
 * The project a metered call is billed against (spec project rule): the body's projectId (already
 * checked against the key's scope by the auth middleware), else the key's only project.
 * @throws AppError project_id_required when the key spans several projects and none was named.
 */
export function resolveProject(req: Request): string {
  const principal = req.principal!;
  const given = (req.body as { projectId?: unknown } | undefined)?.projectId;
  const projectId =
    typeof given === 'string'
      ? given
      : principal.projects.length === 1
        ? principal.projects[0]!.id
        : undefined;
  if (projectId === undefined) {
    throw new AppError('project_id_required', 'This key can reach several projects: name one in projectId.');
  }
  req.res!.locals.projectId = projectId;
  return projectId;
}
