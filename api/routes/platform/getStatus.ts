import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';

/** GET /status: the fleet's one snapshot (see StatusSnapshots), cacheable by clients until it expires. */
export function getStatus({ status }: AppDeps): RequestHandler {
  return async (_req, res) => {
    const { body, remainingMs } = await status.get();
    res.setHeader('Cache-Control', `public, max-age=${Math.max(1, Math.ceil(remainingMs / 1000))}`);
    res.json(body);
  };
}
