import { createHash } from 'node:crypto';

import type { DatabasePool } from 'slonik';

import type { Principal } from '../auth/principal.ts';
import {
  claimIdempotencyKey,
  deleteIdempotencyKey,
  findIdempotencyEntry,
  type IdempotencyEntry,
  type IdempotencyKeyRef,
  insertIdempotentRefusal,
  recordIdempotentAnswer,
  releaseIdempotencyLease,
  renewIdempotencyLease,
  takeIdempotencyLease,
} from '../db/queries/idempotencyKeys.ts';
import type { Db } from '../db/sql.ts';
import { AppError } from '../errors/appError.ts';
import type { Logger } from '../observability/logger.ts';

/** What a request with an Idempotency-Key carries from the gate to its handler. */
export type IdempotencyScope = {
  ref: IdempotencyKeyRef;
  requestHash: string;
  /** The synchronous job this request takes over: the first request with the key left before its answer. */
  resumeJobId?: string;
  /** The key is recorded with work (committed): a refusal must not be stored over it. */
  claimed: boolean;
};

/** A REST request or an operation call (api/pipeline/operationCall.ts): whoever carries a key's scope. */
export type IdempotencyHolder = { principal?: Principal; requestId: string; idempotency?: IdempotencyScope };

/** A stored answer as a request with the same key gets it again. */
export type ReplayedAnswer = {
  status: number;
  body: unknown;
  location: string | null;
  headers: Record<string, string>;
};

/** Another request with the same key committed its work first; this one's work was rolled back. */
export class IdempotencyRace extends Error {
  constructor() {
    super('another request with this Idempotency-Key committed first');
    this.name = 'IdempotencyRace';
  }
}

// A request waiting on a key's job holds it this long, renewed a third of the way through: a client
// that retries after its first connection (or its api process) died takes the job over this soon.
export const leaseSeconds = 15;

/** Key order must not matter: `{a,b}` and `{b,a}` are the same request. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** What makes two requests "the same request": method, path and body (key order aside). */
export function requestHash(req: { method: string; path: string }, body: unknown): string {
  return createHash('sha256')
    .update(`${req.method} ${req.path}\n${JSON.stringify(canonical(body ?? null))}`)
    .digest('hex');
}

/** A stored answer as the replaying request sends it: an error envelope names this request's id. */
function replayBody(body: unknown, requestId: string): unknown {
  const error = (body as { error?: unknown } | null)?.error;
  if (error && typeof error === 'object') return { ...body!, error: { ...error, requestId } };
  return body;
}

/**
 * Idempotency-Key on POSTs that create something (x-svc-idempotent), kept 24 h per credential. The
 * answer is recorded with the work it describes: a create stores it in the transaction that writes
 * its rows (answerFromTransaction), a synchronous generation keys its job by the key when it creates
 * the job (claimInTransaction with the job), so no crash can separate work from its record, and a
 * client that leaves never blocks its own retry: a retry replays the stored answer or takes the job
 * over. Generation keeps nothing: once a job's output has been delivered, a replay answers
 * idempotent_output_discarded rather than keeping the output for 24 h.
 */
export class IdempotencyStore {
  private readonly pool: DatabasePool;
  private readonly logger: Logger;

  constructor(pool: DatabasePool, logger: Logger) {
    this.pool = pool;
    this.logger = logger;
  }

  /**
   * Looks the key up for a call about to run: returns a stored answer to replay, takes over the job
   * of a request that left (sets `resumeJobId`), or lets the call run (sets `holder.idempotency`).
   * @throws AppError idempotency_key_reused (another request body), idempotency_request_in_progress
   *   (the first request is still running), idempotent_output_discarded (its output was delivered).
   */
  async open(holder: IdempotencyHolder, key: string, hash: string): Promise<ReplayedAnswer | undefined> {
    const ref = { credentialId: holder.principal!.credentialId, key };
    const entry = await findIdempotencyEntry(this.pool, ref);
    if (!entry) {
      holder.idempotency = { ref, requestHash: hash, claimed: false };
      return undefined;
    }
    if (entry.request_hash !== hash) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.');
    }
    if (entry.status === 'done') return this.replay(holder, entry);
    if (entry.job_id !== null && !entry.is_leased && (await takeIdempotencyLease(this.pool, ref, leaseSeconds))) {
      holder.idempotency = { ref, requestHash: hash, claimed: true, resumeJobId: entry.job_id };
      return undefined;
    }
    // A retry can take a synchronous job over once the first request's lease ends (it renews it
    // while it waits): no sooner is worth asking.
    throw new AppError(
      'idempotency_request_in_progress',
      'The first request with this Idempotency-Key is still running.',
      { headers: { 'Retry-After': String(entry.job_id === null ? 1 : entry.lease_left_seconds) } },
    );
  }

  private replay(holder: IdempotencyHolder, entry: IdempotencyEntry): ReplayedAnswer {
    const headers = { 'Idempotent-Replayed': 'true' };
    if (entry.output_delivered) {
      throw new AppError(
        'idempotent_output_discarded',
        'The first request with this Idempotency-Key succeeded and its output was delivered to it; generation keeps nothing. Send a new key to generate again.',
        { headers },
      );
    }
    return {
      status: entry.response_status ?? 200,
      body: replayBody(entry.response_body, holder.requestId),
      location: entry.response_location,
      headers,
    };
  }

  /**
   * Takes the request's key inside the transaction of its work (a no-op without a key); `jobId`
   * keys that synchronous job by it, leased to this request.
   * @throws IdempotencyRace when a request with the same key took it first: the work must roll back.
   */
  async claimInTransaction(tx: Db, req: IdempotencyHolder, jobId: string | null = null): Promise<void> {
    const scope = req.idempotency;
    if (!scope) return;
    const claimed = await claimIdempotencyKey(tx, {
      ...scope.ref,
      requestHash: scope.requestHash,
      jobId,
      leaseSeconds,
    });
    if (!claimed) throw new IdempotencyRace();
  }

  /** Stores the answer of work in its transaction (after claimInTransaction); a no-op without a key. */
  async recordInTransaction(
    tx: Db,
    req: IdempotencyHolder,
    answer: { status: number; body: unknown; location: string | null },
  ): Promise<void> {
    if (req.idempotency) await recordIdempotentAnswer(tx, req.idempotency.ref, answer);
  }

  /**
   * The one way a creating operation answers: its work and (with a key) its stored answer commit in
   * one transaction. A duplicate that lost the race replays the winner's answer.
   */
  async commitAnswer<Body>(
    holder: IdempotencyHolder,
    status: number,
    work: (tx: Db) => Promise<{ body: Body; location: string | null }>,
  ): Promise<{ body: Body; location: string | null }> {
    const answer = await this.pool.transaction(async (tx) => {
      await this.claimInTransaction(tx, holder);
      const out = await work(tx);
      await this.recordInTransaction(tx, holder, { status, ...out });
      return out;
    });
    if (holder.idempotency) holder.idempotency.claimed = true;
    return answer;
  }

  /**
   * Stores a refusal (4xx) the handler gave before any work committed, so a retry gets the same
   * answer (as Stripe keeps them). Nothing is stored over a key recorded with work.
   */
  async storeRefusal(req: IdempotencyHolder, status: number, body: unknown): Promise<void> {
    const scope = req.idempotency;
    if (!scope || scope.claimed || status >= 500) return;
    await insertIdempotentRefusal(this.pool, { ...scope.ref, requestHash: scope.requestHash, status, body }).catch(
      (error: unknown) => this.logger.error({ err: error, requestId: req.requestId }, 'idempotency write failed'),
    );
  }

  /**
   * While a request waits on its key's job: renews the lease; `finish` says how the wait ended.
   * Delivered output is marked (replays then say it is gone); a server-side failure forgets the key
   * (a retry runs the work anew); a client that left gives the lease up at once.
   */
  holdWhileWaiting(req: IdempotencyHolder): {
    finish(outcome: 'delivered' | 'failed' | 'left', answer?: { status: number }): Promise<void>;
  } {
    const scope = req.idempotency;
    if (!scope?.claimed) return { finish: async () => {} };
    const timer = setInterval(
      () =>
        void renewIdempotencyLease(this.pool, scope.ref, leaseSeconds).catch((error: unknown) =>
          this.logger.warn({ err: error }, 'idempotency lease renewal failed'),
        ),
      (leaseSeconds * 1000) / 3,
    );
    timer.unref();
    return {
      finish: async (outcome, answer) => {
        clearInterval(timer);
        const write =
          outcome === 'delivered'
            ? recordIdempotentAnswer(this.pool, scope.ref, {
                status: answer?.status ?? 201,
                body: null,
                location: null,
                outputDelivered: true,
              })
            : outcome === 'failed'
              ? deleteIdempotencyKey(this.pool, scope.ref)
              : releaseIdempotencyLease(this.pool, scope.ref);
        await write.catch((error: unknown) =>
          this.logger.error({ err: error, requestId: req.requestId }, 'idempotency write failed'),
        );
      },
    };
  }
}
