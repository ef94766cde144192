import type { Response } from 'express';

import type { Db } from '../../shared/db/sql.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { type IdempotencyHolder, IdempotencyStore } from '../../shared/idempotency/idempotencyStore.ts';

/** The idempotency store as Express handlers use it: stored and committed answers sent on `res`. */
export class RequestIdempotency extends IdempotencyStore {
  /** open() for an Express request: a stored answer is sent on `res` (true: answered). */
  async openRequest(req: IdempotencyHolder, res: Response, key: string, hash: string): Promise<boolean> {
    const replayed = await this.open(req, key, hash);
    if (!replayed) return false;
    for (const [name, value] of Object.entries(replayed.headers)) res.setHeader(name, value);
    if (replayed.location !== null) res.location(replayed.location);
    res.status(replayed.status).json(replayed.body);
    return true;
  }

  /** commitAnswer, then the answer is sent on `res`. */
  async answerFromTransaction(
    req: IdempotencyHolder,
    res: Response,
    status: number,
    work: (tx: Db) => Promise<{ body: unknown; location: string | null }>,
  ): Promise<void> {
    const answer = await this.commitAnswer(req, status, work);
    if (answer.location !== null) res.location(answer.location);
    res.status(status).json(answer.body);
  }

  /** A duplicate that lost the race: answers as a retry arriving now would be answered. */
  async answerRace(req: IdempotencyHolder, res: Response): Promise<void> {
    const scope = req.idempotency!;
    req.idempotency = undefined;
    if (!(await this.openRequest(req, res, scope.ref.key, scope.requestHash))) {
      // The winner's key is gone again (its work failed on the server): the caller retries.
      throw new AppError(
        'idempotency_request_in_progress',
        'Another request with this Idempotency-Key is running.',
      );
    }
  }
}
