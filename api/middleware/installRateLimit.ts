import type { Express } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { parentOf } from '../mcp/internalCall.ts';
import type { RateLimiter } from '../rateLimiter.ts';

/** Per-workspace request budget per minute, shared by every api process (see RateLimiter). */
export function installRateLimit(app: Express, limiter: RateLimiter, defaultPerMinute: number): void {
  app.use(apiBasePath, async (req, _res, next) => {
    const principal = req.principal;
    // A tool call of POST /mcp (internalCall.ts): a lone one is covered by the /mcp request's own
    // token; in a batch each takes one, so a batch cannot buy many calls for one request.
    const parent = parentOf(req);
    if (!principal || (parent && !Array.isArray(parent.body))) return next();
    const decision = await limiter.take(
      principal.workspaceId,
      principal.rateLimitPerMinute ?? defaultPerMinute,
    );
    if (!decision.allowed) {
      throw new AppError(
        'rate_limited',
        `Too many requests for this workspace; retry after ${decision.retryAfterSeconds} s.`,
        {
          headers: { 'Retry-After': String(decision.retryAfterSeconds) },
        },
      );
    }
    next();
  });
}
