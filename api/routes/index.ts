import { Router } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import type { AppDeps } from '../deps.ts';
import type { RequestValidation } from '../openapi/requestValidation.ts';
import { searchBrain } from './brain/searchBrain.ts';
import { documentHandlers } from './files/documentHandlers.ts';
import { fileHandlers } from './files/index.ts';
import { generationHandlers } from './generation/index.ts';
import type { HandlerTable } from './handlerTable.ts';
import { getJob } from './jobs/getJob.ts';
import { getMe } from './platform/getMe.ts';
import { getOpenapi } from './platform/getOpenapi.ts';
import { getReference } from './platform/getReference.ts';
import { getStatus } from './platform/getStatus.ts';
import { postMcp } from './platform/postMcp.ts';
import { taskHandlers } from './tasks/index.ts';
import { videoHandlers } from './videos/index.ts';

export function handlerTable(deps: AppDeps, validation: RequestValidation): HandlerTable {
  const table: HandlerTable = {
    'platform.openapi': getOpenapi(deps),
    'platform.status': getStatus(deps),
    'platform.me': getMe,
    'platform.reference': getReference(deps),
    'jobs.read': getJob(deps),
    ...generationHandlers(deps),
    ...taskHandlers(deps),
    ...fileHandlers(deps),
    ...videoHandlers(deps),
    'brain.search': searchBrain(deps),
    ...documentHandlers(deps),
  };
  // MCP tools call the other operations' handlers (api/mcp/runOperation.ts).
  table['platform.mcp'] = postMcp(deps, table, validation);
  return table;
}

/** Mounts every documented operation that has a handler at its OpenAPI path. */
export function makeApiRouter(deps: AppDeps, validation: RequestValidation): Router {
  const router = Router({ caseSensitive: true });
  const handlers = handlerTable(deps, validation);
  for (const op of deps.doc.operations) {
    const handler = handlers[op.id];
    if (!handler) continue;
    const expressPath = op.path.replace(/\{([^}]+)\}/g, ':$1');
    router[op.method.toLowerCase() as 'get' | 'post'](expressPath, handler);
  }
  return router;
}

export { apiBasePath };
