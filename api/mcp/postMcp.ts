import type { RequestHandler } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import type { OperationFunction } from '../pipeline/operationCall.ts';
import type { OperationPipeline } from '../pipeline/pipeline.ts';
import { dispatch } from './dispatch.ts';
import { checkHeaders } from './headerChecks.ts';
import { asRequest, mcpCodes, rpcCodes, rpcError, RpcFailure, type RpcResponse } from './jsonRpc.ts';
import { serveListen } from './listen.ts';
import type { McpDeps } from './methodContext.ts';
import { toolsOf } from './tools.ts';

// Each tool call is a whole API request: a batch stays a handful of them.
const maxBatch = 20;

/**
 * POST /mcp, stateless Streamable HTTP: answers in JSON (never SSE: nothing here streams). Framing
 * errors of the whole body answer 400 with a JSON-RPC error; anything per message answers 200.
 */
export function postMcp(
  deps: McpDeps,
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
    const lone = batch ? undefined : asRequest(messages[0]);
    if (checked.stateless && lone?.method === 'subscriptions/listen' && lone.id !== undefined) {
      const ctx = { deps, principal: call.principal!, stateless: true };
      await listen(
        () => serveListen(req, res, ctx, { id: lone.id!, params: lone.params ?? {} }),
        lone.id,
        res,
      );
      return;
    }
    const calls = {
      doc: deps.doc,
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
      const answer = await dispatch(message, { tools, calls, deps, seq, stateless: checked.stateless });
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

/**
 * Runs a subscriptions/listen; what refuses it before its stream opens is a JSON-RPC error (a scope
 * the credential lacks, bad params), except the workspace's stream limit, which answers 429
 * rate_limited with Retry-After in the API's envelope, as the task stream does.
 */
async function listen(serve: () => Promise<void>, id: string | number, res: Parameters<RequestHandler>[1]) {
  try {
    await serve();
  } catch (error) {
    if (res.headersSent) throw error;
    if (error instanceof RpcFailure) {
      res.json(rpcError(id, error.code, error.message, error.data));
    } else if (error instanceof AppError && error.code !== 'rate_limited' && error.status < 500) {
      res.json(rpcError(id, mcpCodes.apiRefused, error.message, { code: error.code }));
    } else {
      throw error;
    }
  }
}
