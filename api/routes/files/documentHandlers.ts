import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';
import { exportFile } from './exportFile.ts';
import { renderFile } from './renderFile.ts';

/** Native documents: exports by kind and deck renders (openapi.yaml operationId → handler). */
export function documentHandlers(deps: AppDeps): Record<string, RequestHandler> {
  return {
    'files.export': exportFile(deps),
    'files.render': renderFile(deps),
  };
}
