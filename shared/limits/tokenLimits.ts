import {
  findTokenWindowUsed,
  insertTokenReservation,
  reserveTokenWindow,
  settleTokenReservation,
} from '../db/queries/tokenLimits.ts';
import type { Db } from '../db/sql.ts';
import { AppError } from '../errors/appError.ts';

/** Token limits count in fixed windows of a minute, as the request limiter does (api/auth/rateLimiter.ts). */
export const tokenWindowMs = 60_000;

/** Who a call's tokens count against: its workspace and its key, each with its own limit (null: none). */
export type TokenLimited = {
  workspaceId: string;
  keyId: string | null;
  workspaceTokensPerMinute: number | null;
  keyTokensPerMinute: number | null;
};

/** The tighter of a call's token windows after its reservation: what the x-ratelimit-*-tokens headers say. */
export type TokenWindowState = { limit: number; remaining: number; resetMs: number };

type Scope = { scope: string; limit: number; name: string };

function scopesOf(who: TokenLimited): Scope[] {
  const scopes: Scope[] = [];
  // Always the workspace first, then the key: every transaction takes the rows in that order.
  if (who.workspaceTokensPerMinute !== null) {
    scopes.push({ scope: `ws:${who.workspaceId}`, limit: who.workspaceTokensPerMinute, name: 'workspace' });
  }
  if (who.keyId !== null && who.keyTokensPerMinute !== null) {
    scopes.push({ scope: `key:${who.keyId}`, limit: who.keyTokensPerMinute, name: 'key' });
  }
  return scopes;
}

/**
 * Reserves `tokens` (the call's upper bound: every input byte a token, and its whole output budget)
 * in the workspace's and the key's window of this minute, in `tx` (the transaction creating the
 * call's job, so the reservation exists iff the job does), and records it for the job to settle.
 * A window the reservation would take past its limit refuses the whole call: since the bound is never
 * below what the call can use, the tokens admitted in a window never pass its limit, whatever the
 * number of processes racing (each upsert takes the window's row lock). A call bigger than a whole
 * window's limit is refused outright, its message saying so. Returns undefined when no limit applies.
 * @throws AppError rate_limited, with Retry-After and the x-ratelimit-*-tokens headers.
 */
export async function reserveTokens(
  tx: Db,
  who: TokenLimited,
  call: { jobId: string; tokens: number; now: number },
): Promise<TokenWindowState | undefined> {
  const scopes = scopesOf(who);
  if (scopes.length === 0) return undefined;
  const window = Math.floor(call.now / tokenWindowMs);
  const windowStart = new Date(window * tokenWindowMs).toISOString();
  const resetMs = (window + 1) * tokenWindowMs - call.now;
  let tightest: TokenWindowState | undefined;
  for (const s of scopes) {
    const used = await reserveTokenWindow(tx, s.scope, windowStart, call.tokens, s.limit);
    if (used === null) {
      const remaining = Math.max(0, s.limit - (await findTokenWindowUsed(tx, s.scope, windowStart)));
      throw refusal(s, call.tokens, { limit: s.limit, remaining, resetMs });
    }
    if (tightest === undefined || s.limit - used < tightest.remaining) {
      tightest = { limit: s.limit, remaining: s.limit - used, resetMs };
    }
  }
  await insertTokenReservation(tx, {
    jobId: call.jobId,
    workspaceId: who.workspaceId,
    keyId: who.keyId,
    windowStart,
    tokens: call.tokens,
  });
  return tightest;
}

function refusal(s: Scope, tokens: number, state: TokenWindowState): AppError {
  const retryAfter = Math.max(1, Math.ceil(state.resetMs / 1000));
  const headers = { 'Retry-After': String(retryAfter), ...tokenHeaders(state) };
  const message =
    tokens > s.limit
      ? `This call may use up to ${tokens} tokens, more than the ${s.name}'s limit of ${s.limit} tokens per minute; lower maxTokens or shorten the input.`
      : `Too many tokens per minute for this ${s.name}; retry after ${retryAfter} s.`;
  return new AppError('rate_limited', message, { headers });
}

/** OpenAI's names (docs/providers.md#limits): the tighter window's limit, what is left, when it resets. */
export function tokenHeaders(state: TokenWindowState): Record<string, string> {
  return {
    'x-ratelimit-limit-tokens': String(state.limit),
    'x-ratelimit-remaining-tokens': String(Math.max(0, state.remaining)),
    'x-ratelimit-reset-tokens': `${Math.max(1, Math.ceil(state.resetMs / 1000))}s`,
  };
}

/**
 * Settles a job's reservation to the tokens it really used (0 for a job that failed): each window it
 * was taken from gets the difference back (or, past the bound, pays it). Exactly once; a job that
 * reserved nothing (a test key, no limit) changes nothing.
 */
export function settleTokens(db: Db, jobId: string, used: number): Promise<void> {
  return settleTokenReservation(db, jobId, Math.max(0, Math.round(used)));
}
