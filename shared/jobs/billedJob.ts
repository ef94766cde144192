import type { DatabasePool } from 'slonik';

import { creditRefusalAtCommit, reserveCreditsAtCommit } from '../billing/metering.ts';
import type { Config } from '../config/config.ts';
import type { JobRow } from '../db/queries/jobs.ts';
import type { Db } from '../db/sql.ts';
import type { IdempotencyHolder, IdempotencyStore } from '../idempotency/idempotencyStore.ts';
import { reserveTokens, type TokenWindowState } from '../limits/tokenLimits.ts';
import type { Logger } from '../observability/logger.ts';
import { newId } from '../primitives/ids.ts';
import { type JobCreator, newJobId } from './createJob.ts';
import type { JobWaiter } from './jobWaiter.ts';
import { type JobType } from './specs.ts';

/** What billed jobs need: the pool, the job creator and waiter, the key store. */
export type BilledJobDeps = {
  pool: DatabasePool;
  jobs: JobCreator;
  jobWaiter: JobWaiter;
  config: Pick<Config, 'syncTimeoutMs'>;
  logger: Logger;
  idempotency: IdempotencyStore;
};

function tokenLimited(principal: NonNullable<JobCaller['principal']>) {
  return {
    workspaceId: principal.workspaceId,
    keyId: principal.keyId,
    workspaceTokensPerMinute: principal.tokensPerMinute ?? null,
    keyTokensPerMinute: principal.keyTokensPerMinute ?? null,
  };
}

/** Who runs a billed job: a REST request or an operation call, authenticated (principal set). */
export type JobCaller = IdempotencyHolder;

export type BilledJob = {
  /** Allocated by the caller that must listen for the job before it exists (newJobId). */
  id?: string;
  type: JobType;
  projectId: string;
  input: Record<string, unknown>;
  maxCostMinor: number;
  /**
   * A model call's most tokens (input upper bound + output budget): reserved against the caller's
   * tokens-per-minute limits (live keys), settled by the job (shared/limits/tokenLimits.ts);
   * `onTokens` hears the tighter window's state for the answer's headers.
   */
  tokens?: { count: number; onTokens?(state: TokenWindowState): void };
  /** Rows the operation writes with its job (a video), in the job's transaction. */
  alsoWrite?: (tx: Db, job: JobRow) => Promise<void>;
};

/**
 * Reserves the call's maximum cost (live keys only) and creates its job in ONE transaction: the job
 * exists iff its hold does (and the operation's own rows, `alsoWrite`), and a failed reservation
 * leaves nothing behind. The reservation is made as the transaction commits (reserveCreditsAtCommit):
 * the workspace's balance lock every live call shares is held inside COMMIT only. With an Idempotency-Key
 * the key is taken in the same transaction: a synchronous job (`answer` omitted) is keyed by it, an
 * asynchronous one stores its `answer` with it.
 * @throws AppError insufficient_credits / key_spend_limit_reached from reserveCredits;
 *   IdempotencyRace when a request with the same key took it first.
 */
export async function startBilledJob(
  deps: Pick<BilledJobDeps, 'pool' | 'jobs' | 'idempotency'>,
  caller: JobCaller,
  job: BilledJob,
  answer?: (row: JobRow) => { status: number; body: unknown; location: string | null },
): Promise<JobRow> {
  const principal = caller.principal!;
  const id = job.id ?? newJobId();
  const create = (db: Db, holdId: string | null) =>
    deps.jobs.create(db, {
      id,
      workspaceId: principal.workspaceId,
      projectId: job.projectId,
      keyId: principal.keyId,
      oauthAppId: principal.oauthAppId,
      type: job.type,
      livemode: principal.livemode,
      input: job.input,
      holdId,
      requestId: caller.requestId,
    });
  // Test keys reserve nothing: without a key to record, the job alone is one atomic statement.
  if (!principal.livemode && !caller.idempotency && !job.alsoWrite) return create(deps.pool, null);
  const row = await deps.pool.transaction(async (tx) => {
    await deps.idempotency.claimInTransaction(tx, caller, answer ? null : id);
    // Test keys answer with fixtures: no model tokens to limit.
    if (job.tokens && principal.livemode) {
      const state = await reserveTokens(tx, tokenLimited(principal), {
        jobId: id,
        tokens: job.tokens.count,
        now: Date.now(),
      });
      if (state) job.tokens.onTokens?.(state);
    }
    const holdId = principal.livemode ? newId('hold') : null;
    const created = await create(tx, holdId);
    await job.alsoWrite?.(tx, created);
    if (answer) await deps.idempotency.recordInTransaction(tx, caller, answer(created));
    if (holdId !== null) {
      await reserveCreditsAtCommit(tx, {
        principal,
        projectId: job.projectId,
        operation: job.type,
        maxCostMinor: job.maxCostMinor,
        requestId: caller.requestId,
        holdId,
      });
    }
    return created;
  }).catch((error: unknown) => {
    throw creditRefusalAtCommit(error) ?? error;
  });
  if (caller.idempotency) caller.idempotency.claimed = true;
  return row;
}
