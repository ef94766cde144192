import type { Request } from 'express';

import type { Principal } from '../../shared/auth/principal.ts';
import type { Actor } from '../../shared/tasks/messages.ts';
import { billedProject } from './resolveProject.ts';

type Caller = { principal?: Principal; body: unknown; requestId: string; projectId?: string };

/**
 * The caller as the author of task work: its workspace, and the project its replies are metered
 * against (spec project rule, so a multi-project key must name one).
 * @throws AppError project_id_required when the key spans several projects and none was named.
 */
export function actorOf(call: Caller): Actor {
  const principal = call.principal!;
  return {
    workspaceId: principal.workspaceId,
    projectId: billedProject(call),
    keyId: principal.keyId,
    oauthAppId: principal.oauthAppId,
    livemode: principal.livemode,
    requestId: call.requestId,
  };
}

/** actorOf for an Express request: the project goes to `res.locals`, where the request log reads it. */
export function actorFromRequest(req: Request): Actor {
  const actor = actorOf({ principal: req.principal, body: req.body, requestId: req.requestId });
  req.res!.locals.projectId = actor.projectId;
  return actor;
}
