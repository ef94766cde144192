import type { RequestHandler } from 'express';

import type { Db } from '../../shared/db/sql.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { sameSecret } from '../../shared/primitives/sameSecret.ts';
import { oldestDueJobSeconds } from '../../shared/queue/queueStats.ts';

/** The Procfile process HireFire scales on the answer. */
const workerProcess = 'worker';

/**
 * HireFire's worker-queue endpoint, in both forms its resource libraries answer: `GET /hirefire`
 * with a `HireFire-Token` header, and the older `GET /hirefire/<token>/info`. The answer is
 * `[{ "name": "worker", "value": <seconds> }]`, the oldest due job's age (any lane) rounded up, for
 * HireFire's Job Queue Latency strategy: it is read from the database by the web process, so it
 * wakes a worker formation scaled to zero. A wrong or missing token is answered as no such path.
 */
export function hirefireEndpoint(db: Db, token: string): RequestHandler {
  return async (req, res) => {
    const given = req.params.token ?? req.get('hirefire-token');
    if (given === undefined || !sameSecret(String(given), token)) {
      throw new AppError('not_found', `No endpoint ${req.method} ${req.path}.`);
    }
    // Rounded up: a job waiting for a fraction of a second still counts, and wakes a worker.
    const value = Math.ceil(await oldestDueJobSeconds(db));
    res.setHeader('Cache-Control', 'must-revalidate, private, max-age=0');
    res.json([{ name: workerProcess, value }]);
  };
}
