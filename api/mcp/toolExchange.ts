import type { IncomingHttpHeaders } from 'node:http';

import type { Request, Response } from 'express';

import type { Operation } from '../openapi/document.ts';

/**
 * The response a tool call hands its REST handler: the part of Express's response our handlers use
 * (status, Location and other headers, locals, json), held in memory. The JSON body becomes the
 * tool's result; nothing is serialised or written to a socket.
 */
export class ToolResponse {
  statusCode = 200;
  headersSent = false;
  locals: Response['locals'] = {};
  body: unknown;
  private readonly headers = new Map<string, string>();

  status(code: number): this {
    this.statusCode = code;
    return this;
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    this.headers.set(name.toLowerCase(), String(value));
    return this;
  }

  set(name: string, value: string): this {
    return this.setHeader(name, value);
  }

  getHeader(name: string): string | undefined {
    return this.headers.get(name.toLowerCase());
  }

  get(name: string): string | undefined {
    return this.getHeader(name);
  }

  location(url: string): this {
    return this.setHeader('Location', url);
  }

  json(body: unknown): this {
    this.body = body;
    // Where installRequestLog keeps a REST answer, for the same log entry.
    this.locals.responseBody = body;
    this.headersSent = true;
    return this;
  }

  /** As the handler's `res` (it only uses the members above). */
  asExpress(): Response {
    return this as unknown as Response;
  }
}

export type ToolRequestInit = {
  operation: Operation;
  /** The REST URL from the root, API base included: the validator matches it as it matches REST calls. */
  url: string;
  params: Record<string, string>;
  body: unknown;
  requestId: string;
};

/**
 * The request a tool call hands its REST handler: an Express request (its getters: path, query)
 * for the REST URL, acting as the /mcp request's principal, already authenticated, and with its
 * client address (trust proxy applied) for the request log.
 */
export function toolRequest(outer: Request, res: ToolResponse, init: ToolRequestInit): Request {
  // The app's request prototype (Express's methods and getters, with `app`), as Express gives each request.
  const proto = (outer.app as unknown as { request: Request }).request;
  const req = Object.create(proto) as Request;
  const headers: IncomingHttpHeaders = { 'x-request-id': init.requestId };
  if (outer.headers.authorization !== undefined) headers.authorization = outer.headers.authorization;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  Object.assign(req, {
    method: init.operation.method,
    url: init.url,
    originalUrl: init.url,
    baseUrl: '',
    headers,
    params: init.params,
    requestId: init.requestId,
    startedAt: process.hrtime.bigint(),
    operation: init.operation,
    principal: outer.principal,
    res: res.asExpress(),
  });
  // `ip` is a getter on Express's request (it reads the socket); the tool call has none of its own.
  Object.defineProperty(req, 'ip', { value: outer.ip, enumerable: true });
  return req;
}
