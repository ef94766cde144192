import { Router } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import type { AppDeps } from '../deps.ts';
import { restHandler } from '../pipeline/pipeline.ts';
import { documentHandlers } from './files/documentHandlers.ts';
import { fileHandlers } from './files/index.ts';
import { generationHandlers } from './generation/index.ts';
import type { HandlerTable } from './handlerTable.ts';
import { getJob } from './jobs/getJob.ts';
import type { OperationFunctions } from './operationFunctions.ts';
import { getOpenapi } from './platform/getOpenapi.ts';
import { getReference } from './platform/getReference.ts';
import { getStatus } from './platform/getStatus.ts';
import { taskHandlers } from './tasks/index.ts';
import { videoHandlers } from './videos/index.ts';

/** operationId → handler; `operations` (the ones MCP tools run too) through the one REST adapter. */
export function handlerTable(deps: AppDeps, operations: OperationFunctions): HandlerTable {
  const table: HandlerTable = {
    'platform.openapi': getOpenapi(deps),
    'platform.status': getStatus(deps),
    'platform.reference': getReference(deps),
    'jobs.read': getJob(deps),
    ...generationHandlers(deps),
    ...taskHandlers(deps),
    ...fileHandlers(deps),
    ...videoHandlers(deps),
    ...documentHandlers(deps),
  };
  for (const [id, operation] of Object.entries(operations)) table[id] = restHandler(operation);
  return table;
}

/** Mounts every documented operation that has a handler at its OpenAPI path. */
export function makeApiRouter(deps: AppDeps, operations: OperationFunctions): Router {
  const router = Router({ caseSensitive: true });
  const handlers = handlerTable(deps, operations);
  for (const op of deps.doc.operations) {
    const handler = handlers[op.id];
    if (!handler) continue;
    const expressPath = op.path.replace(/\{([^}]+)\}/g, ':$1');
    router[op.method.toLowerCase() as 'get' | 'post'](expressPath, handler);
  }
  return router;
}

export { apiBasePath };
