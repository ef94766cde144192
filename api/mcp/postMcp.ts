import type { RequestHandler } from 'express';

import type { AppError } from '../../shared/errors/appError.ts';
import type { AppDeps } from '../deps.ts';
import type { OperationFunction } from '../pipeline/operationCall.ts';
import type { OperationPipeline } from '../pipeline/pipeline.ts';
import { dispatch } from './dispatch.ts';
import { checkHeaders } from './headerChecks.ts';
import { rpcCodes, rpcError, type RpcResponse } from './jsonRpc.ts';
import { toolsOf } from './tools.ts';

// Each tool call is a whole API request: a batch stays a handful of them.
const maxBatch = 20;

/**
 * POST /mcp, stateless Streamable HTTP: answers in JSON (never SSE: nothing here streams). Framing
 * errors of the whole body answer 400 with a JSON-RPC error; anything per message answers 200.
 */
export function postMcp(
  deps: Pick<AppDeps, 'doc'>,
  functions: Record<string, OperationFunction>,
  pipeline: Pick<OperationPipeline, 'run'>,
): RequestHandler {
  const tools = toolsOf(deps.doc);
  for (const tool of tools.values()) {
    if (!functions[tool.op.id]) {
      throw new Error(`MCP tool ${tool.name}: no operation function for ${tool.op.id}`);
    }
  }
  return async (req, res) => {
    // The pipeline's front made the call of this request: its principal, body or body error.
    const call = req.call!;
    if (call.bodyError !== undefined) {
      const type = ((call.bodyError as AppError).cause as { type?: unknown } | undefined)?.type;
      if (type !== 'entity.parse.failed') throw call.bodyError;
      res.status(400).json(rpcError(null, rpcCodes.parseError, 'Parse error: the body is not valid JSON.'));
      return;
    }
    const body: unknown = call.body;
    const batch = Array.isArray(body);
    const messages = batch ? body : [body];
    if (messages.length === 0 || messages.length > maxBatch) {
      const why = messages.length === 0 ? 'an empty batch' : `a batch holds at most ${maxBatch} messages`;
      res.status(400).json(rpcError(null, rpcCodes.invalidRequest, `Invalid Request: ${why}.`));
      return;
    }
    const checked = checkHeaders(req, messages);
    if ('error' in checked) {
      res.status(400).json(checked.error);
      return;
    }
    const calls = {
      pipeline,
      functions,
      principal: call.principal!,
      ip: call.ip,
      requestId: call.requestId,
      batch,
      logged: 0,
    };
    const answers: RpcResponse[] = [];
    for (const [seq, message] of messages.entries()) {
      const answer = await dispatch(message, { tools, calls, seq, stateless: checked.stateless });
      if (answer) answers.push(answer);
    }
    // A call is logged once: a request of tool calls only is logged as the operations they ran,
    // each entry's request id naming this request (callTool).
    res.locals.loggedAsToolCalls = calls.logged === messages.length;
    if (answers.length === 0) {
      res.status(202).end();
      return;
    }
    if (!batch && 'error' in answers[0]! && answers[0].error.code === rpcCodes.invalidRequest) {
      res.status(400).json(answers[0]);
      return;
    }
    res.json(batch ? answers : answers[0]);
  };
}
