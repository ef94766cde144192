import type { Request, Response } from 'express';

import { meterCacheHit } from '../../shared/cache/meterCacheHit.ts';
import { type CacheableCall, makeResponseCache } from '../../shared/cache/responseCache.ts';
import type { AppDeps } from '../deps.ts';
import { settledCost } from './settledCost.ts';

/** The cache's name in Cache-Status (RFC 9211). */
const cacheName = 'svc';

type Body = Record<string, unknown>;

/** A call that asked for the cache: the hit's body (cost included, already metered), or a miss to store. */
export type CacheTurn = { hit: Body } | { hit: undefined; store: (body: Body) => Promise<void> };

/**
 * The response cache as an operation sees it. Without a Cache-TTL header the call neither reads nor
 * writes it (undefined, no Cache-Status). A test key answers from its fixtures as always: Cache-Status
 * says `fwd=bypass` and nothing is read or written, so test and live never mix. Otherwise the call's
 * own workspace is looked up: a hit is metered at PRICES.cacheHitPerCall and its body returned; a
 * miss returns `store`, which keeps the body the job produced (a failure to keep it is logged, never
 * the call's failure). The verdict goes to Cache-Status and to the request log.
 * @throws AppError insufficient_credits / key_spend_limit_reached when a priced hit cannot be paid.
 */
export async function openResponseCache(
  deps: AppDeps,
  req: Request,
  res: Response,
  what: Omit<CacheableCall, 'principal' | 'ttlSeconds'> & { projectId: string },
): Promise<CacheTurn | undefined> {
  const ttl = req.get('cache-ttl');
  if (ttl === undefined) return undefined;
  const principal = req.principal!;
  if (!principal.livemode) {
    res.setHeader('Cache-Status', `${cacheName}; fwd=bypass; detail=test-key`);
    return undefined;
  }
  const cache = makeResponseCache(deps);
  const call: CacheableCall = { ...what, principal, ttlSeconds: Number(ttl) };
  // A retry taking over its first request's job (Idempotency-Key) collects that job's answer.
  const found = req.idempotency?.resumeJobId
    ? { status: 'miss' as const, key: cache.keyOf(call) }
    : await cache.lookup(call);
  if (found.status === 'hit') {
    const costMinor = await meterCacheHit(deps.pool, {
      principal,
      projectId: what.projectId,
      operation: what.operation,
      priceMinor: deps.config.prices.cacheHitPerCall,
      requestId: req.requestId,
      model: typeof found.answer.model === 'string' ? found.answer.model : null,
    });
    res.setHeader('Cache-Status', `${cacheName}; hit; ttl=${found.ttlSeconds}`);
    res.locals.cacheStatus = 'hit';
    return { hit: { ...found.answer, cost: settledCost(req, res, costMinor) } };
  }
  res.setHeader('Cache-Status', `${cacheName}; fwd=uri-miss`);
  res.locals.cacheStatus = 'miss';
  const store = async (body: Body) => {
    const { cost: _cost, ...answer } = body;
    try {
      const outcome = await cache.store(call, found.key, answer);
      if (outcome === 'stored' && !res.headersSent) {
        res.setHeader('Cache-Status', `${cacheName}; fwd=uri-miss; stored`);
      }
    } catch (error) {
      deps.logger.warn({ err: error, requestId: req.requestId }, 'response cache store failed');
    }
  };
  return { hit: undefined, store };
}
