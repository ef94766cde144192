import type { IncomingMessage } from 'node:http';

import type { Request } from 'express';

/**
 * A tool call runs its REST operation through this same app, in process: the inner request carries
 * the /mcp request it serves, under a symbol no HTTP caller can set. The inner request reuses the
 * outer one's principal (already checked, headers and IP alike); a lone tool call shares the /mcp
 * request's rate-limit token, each call of a batch takes its own (installRateLimit).
 */
const parentKey = Symbol('mcp parent request');

export function markInternal(inner: IncomingMessage, parent: Request): void {
  (inner as unknown as Record<symbol, Request>)[parentKey] = parent;
}

export function parentOf(req: IncomingMessage): Request | undefined {
  return (req as unknown as Record<symbol, Request | undefined>)[parentKey];
}
