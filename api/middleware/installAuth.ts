import type { Express } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { scopeAllows } from '../../shared/principal.ts';
import { authenticate, type CredentialResolver } from '../auth/authenticate.ts';
import type { KeyCache } from '../auth/keyCache.ts';

/**
 * Authenticates authenticated operations, then applies the project rule's scope half and the
 * operation scope (DESIGN.md order). Which project is billed is decided later, after body validation.
 */
export function installAuth(app: Express, keys: KeyCache, resolvers: CredentialResolver[]): void {
  app.use(apiBasePath, async (req, _res, next) => {
    const operation = req.operation;
    if (!operation?.authenticated) return next();
    const principal = await authenticate(keys, req.get('authorization'), req.ip, resolvers);
    req.principal = principal;
    if (principal.projects.length === 0) {
      throw new AppError('api_key_project_scope', 'This key covers no active project.');
    }
    const projectId = (req.body as { projectId?: unknown } | undefined)?.projectId;
    if (typeof projectId === 'string' && !principal.projects.some((p) => p.id === projectId)) {
      throw new AppError('api_key_project_scope', `Project '${projectId}' is outside this key's scope.`);
    }
    if (operation.scope !== undefined && !scopeAllows(principal.scope, operation.scope)) {
      throw new AppError('api_key_operation_scope', `This key's scope does not cover ${operation.scope}.`);
    }
    next();
  });
}
