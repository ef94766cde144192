import type { RequestHandler } from 'express';

import { scopeAllows } from '../../../shared/auth/principal.ts';
import type { AppDeps } from '../../deps.ts';

/** The full catalogue from the OpenAPI document, with `allowed` computed for the calling key. */
export function getReference({ doc }: AppDeps): RequestHandler {
  return (req, res) => {
    const principal = req.principal!;
    const packages = doc.packages.map((pkg) => ({
      ...pkg,
      operations: doc.operations
        .filter((op) => op.packageId === pkg.id && op.scope !== undefined)
        .map((op) => ({
          id: op.scope!,
          method: op.method,
          path: op.path,
          title: op.title,
          description: op.description,
          billed: op.billed,
          allowed: scopeAllows(principal.scope, op.scope!),
        })),
    }));
    res.json({ scope: principal.scope, packages });
  };
}
