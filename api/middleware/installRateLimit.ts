import type { Express } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import type { Principal } from '../../shared/principal.ts';
import type { RateLimiter } from '../rateLimiter.ts';

/**
 * Takes one request from the workspace's budget per minute, shared by every api process (see
 * RateLimiter).
 * @throws AppError rate_limited, with Retry-After.
 */
export async function takeRequestToken(
  limiter: RateLimiter,
  principal: Principal,
  defaultPerMinute: number,
): Promise<void> {
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
}

/** Every authenticated API request takes a token (takeRequestToken). */
export function installRateLimit(app: Express, limiter: RateLimiter, defaultPerMinute: number): void {
  app.use(apiBasePath, async (req, _res, next) => {
    if (req.principal) await takeRequestToken(limiter, req.principal, defaultPerMinute);
    next();
  });
}
