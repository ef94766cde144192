import type { Express } from 'express';

import { randomBase62 } from '../../shared/primitives/ids.ts';

const callerRequestId = /^[A-Za-z0-9._~-]{8,128}$/;

/** A valid caller-supplied x-request-id is kept; anything else is replaced by a fresh one. Echoed on every response. */
export function installRequestId(app: Express): void {
  app.use((req, res, next) => {
    const given = req.get('x-request-id');
    req.requestId = given !== undefined && callerRequestId.test(given) ? given : `req_${randomBase62(24)}`;
    req.startedAt = process.hrtime.bigint();
    res.setHeader('x-request-id', req.requestId);
    next();
  });
}
