import type { Request } from 'express';

import type { Actor } from '../../../shared/tasks/messages.ts';
import { resolveProject } from '../../auth/resolveProject.ts';

/**
 * The caller as the author of task work: its workspace, and the project its replies are metered
 * against (spec project rule, so a multi-project key must name one).
 * @throws AppError project_id_required when the key spans several projects and none was named.
 */
export function actorFromRequest(req: Request): Actor {
  const principal = req.principal!;
  return {
    workspaceId: principal.workspaceId,
    projectId: resolveProject(req),
    keyId: principal.keyId,
    oauthAppId: principal.oauthAppId,
    livemode: principal.livemode,
    requestId: req.requestId,
  };
}
