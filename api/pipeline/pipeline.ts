import type { RequestHandler, Response } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import type { ApiDocument } from '../openapi/document.ts';
import type { RequestLogWriter } from '../requestLog/requestLogWriter.ts';
import { errorBody, toAppError } from './appErrors.ts';
import { type Check, type CheckDeps, makeChecks, runChecks } from './checks.ts';
import type { Answer, OperationCall, OperationFunction } from './operationCall.ts';
import { requestLogEntry } from './requestLogEntry.ts';
import { exposeCall, readRestBody, restCall } from './restCall.ts';

export type PipelineDeps = CheckDeps & { doc: ApiDocument; logger: Logger; requestLog: RequestLogWriter };

/** Sends an answer on an Express response; what the call billed goes where the request log reads it. */
export function sendAnswer(res: Response, call: OperationCall | undefined, answer: Answer): void {
  if (call?.projectId !== undefined) res.locals.projectId = call.projectId;
  if (call?.costMinor !== undefined) res.locals.costMinor = call.costMinor;
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  if (answer.location) res.location(answer.location);
  res.status(answer.status).json(answer.body);
}

/** An operation function as the Express handler of its REST route (the pipeline built its call). */
export function restHandler(operation: OperationFunction): RequestHandler {
  return async (req, res) => {
    const call = req.call!;
    try {
      sendAnswer(res, call, await operation(call));
    } finally {
      // A failure is logged with the project it was billed against, as an answer is.
      if (call.projectId !== undefined) res.locals.projectId = call.projectId;
    }
  };
}

/**
 * The checks before every operation's handler (checks.ts, the one place their order is written),
 * built once: Express mounts `rest` for REST requests; MCP runs tool calls through `run` with the
 * tool's arguments as the call, no request or response object involved.
 */
export class OperationPipeline {
  private readonly deps: PipelineDeps;
  private readonly checks: { caller: Check[]; call: Check[] };
  private readonly responseCheck: RequestHandler | undefined;

  /** `responseCheck` (tests) hooks the response before the handler runs. */
  constructor(deps: PipelineDeps, responseCheck?: RequestHandler) {
    this.deps = deps;
    this.checks = makeChecks(deps);
    this.responseCheck = responseCheck;
  }

  /**
   * The REST front, mounted at the API base before the handlers: resolves the operation, builds the
   * call from the request, runs the checks around reading the body, and hands the checked request
   * on (or answers a replayed Idempotency-Key).
   */
  readonly rest: RequestHandler = this.restAt(apiBasePath);

  /**
   * The same front for the operations mounted at another base: a compatible API's (api/compat/),
   * whose paths repeat the API's own (/embeddings) but are operations of their own.
   */
  restAt(base: string): RequestHandler {
    return async (req, res, next) => {
      const call = restCall(this.deps.doc, req, res, base);
      req.operation = call.operation;
      let replayed;
      try {
        await runChecks(this.checks.caller, call);
        const reading = readRestBody(req, res, call);
        if (reading) await reading;
        if (this.responseCheck) await this.hookResponse(req, res);
        replayed = await runChecks(this.checks.call, call);
      } finally {
        exposeCall(req, call);
        if (call.answerHeaders) res.set(call.answerHeaders);
      }
      if (replayed) return sendAnswer(res, undefined, replayed);
      next();
    };
  }

  /**
   * An operation call made without HTTP (an MCP tool call, already authenticated as its /mcp
   * request): the per-call checks, the operation, its answer or error envelope, its request-log entry.
   */
  async run(call: OperationCall, operation: OperationFunction): Promise<Answer> {
    let answer: Answer;
    try {
      answer = (await runChecks(this.checks.call, call)) ?? (await operation(call));
    } catch (error) {
      const appError = toAppError(error, { ...call, path: call.fullPath }, this.deps.logger);
      answer = {
        status: appError.status,
        body: errorBody(appError, call.requestId),
        headers: appError.headers,
      };
    }
    this.deps.requestLog.push(
      requestLogEntry(call, {
        status: answer.status,
        body: answer.body,
        projectId: call.projectId,
        costMinor: call.costMinor,
      }),
    );
    return answer;
  }

  private hookResponse(
    req: Parameters<RequestHandler>[0],
    res: Parameters<RequestHandler>[1],
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      void this.responseCheck!(req, res, (error?: unknown) =>
        error === undefined ? resolve() : reject(error),
      );
    });
  }
}
