import type { Express } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import type { OperationFunction } from '../pipeline/operationCall.ts';
import type { OperationPipeline } from '../pipeline/pipeline.ts';
import type { McpDeps } from './methodContext.ts';
import { postMcp } from './postMcp.ts';

/**
 * The remote MCP server, beside the REST API: POST /mcp is the contract's platform.mcp operation,
 * so the pipeline's front (mounted at the API base before it) has resolved it, checked its Origin
 * and credential, read its body and taken its rate-limit token; its tool calls run through the
 * same pipeline (pipeline.run), with the operations' own functions.
 */
export function installMcp(
  app: Express,
  deps: McpDeps,
  operations: Record<string, OperationFunction>,
  pipeline: Pick<OperationPipeline, 'run'>,
): void {
  app.post(`${apiBasePath}/mcp`, postMcp(deps, operations, pipeline));
}
