import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';
import { readStatus } from '../../status.ts';

const cacheMs = 30_000;

/** GET /status, cached 30 s per process and for clients (spec "Limits"). */
export function getStatus({ pool }: AppDeps): RequestHandler {
  let cached: { at: number; body: Promise<Awaited<ReturnType<typeof readStatus>>> } | undefined;
  return async (_req, res) => {
    const now = Date.now();
    if (!cached || now - cached.at >= cacheMs) {
      cached = { at: now, body: readStatus(pool) };
      cached.body.catch(() => {
        cached = undefined;
      });
    }
    const body = await cached.body;
    res.setHeader(
      'Cache-Control',
      `public, max-age=${Math.max(1, Math.ceil((cacheMs - (now - cached.at)) / 1000))}`,
    );
    res.json(body);
  };
}
