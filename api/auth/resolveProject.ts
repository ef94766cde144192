import type { Request } from 'express';

import type { Principal } from '../../shared/auth/principal.ts';
import { AppError } from '../../shared/errors/appError.ts';

/**
 * The project a metered call is billed against (spec project rule): the body's projectId (already
 * checked against the key's scope by the scope check), else the key's only project. Kept on the
 * call for its request-log entry.
 * @throws AppError project_id_required when the key spans several projects and none was named.
 */
export function billedProject(call: { principal?: Principal; body: unknown; projectId?: string }): string {
  const principal = call.principal!;
  const given = (call.body as { projectId?: unknown } | undefined)?.projectId;
  const projectId =
    typeof given === 'string'
      ? given
      : principal.projects.length === 1
        ? principal.projects[0]!.id
        : undefined;
  if (projectId === undefined) {
    throw new AppError('project_id_required', 'This key can reach several projects: name one in projectId.');
  }
  call.projectId = projectId;
  return projectId;
}

/** billedProject for an Express request: the project goes to `res.locals`, where the request log reads it. */
export function resolveProject(req: Request): string {
  const projectId = billedProject({ principal: req.principal, body: req.body });
  req.res!.locals.projectId = projectId;
  return projectId;
}
