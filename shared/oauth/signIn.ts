import type { DatabasePool } from 'slonik';

import { decoyHash, hashPassword, verifyPassword } from '../auth/passwords.ts';
import {
  clearSignInFailures,
  refundSignInAttempts,
  type SignInAttemptRow,
  takeSignInAttempt,
} from '../db/queries/browserSessions.ts';
import { findMembersByEmail, updateMemberPasswordHash } from '../db/queries/members.ts';
import { type Clock, isoAt } from '../primitives/clock.ts';
import type { Semaphore } from '../primitives/semaphore.ts';

/** Failed sign-ins allowed per window, per account (email) and per client address. */
export type SignInLimits = { perAccount: number; perAddress: number; windowSeconds: number };

export const defaultSignInLimits: SignInLimits = { perAccount: 10, perAddress: 100, windowSeconds: 15 * 60 };

export type SignInResult =
  | { kind: 'ok'; email: string; memberIds: string[] }
  | { kind: 'failed' }
  /** Too many failures for the account or the address: until the window ends. */
  | { kind: 'throttled'; retryAfterSeconds: number }
  /** Every password check this process allows at once is taken: try again in a moment. */
  | { kind: 'busy'; retryAfterSeconds: number };

type Attempt = { email: string; password: string; subjects: string[] };

/**
 * Checks an email and password against every member row of that email (one per workspace): the
 * person is signed in to those whose password matches. Old scrypt hashes are verified and replaced by
 * argon2id. The attempt takes its slot (one statement) before any hash is computed, so however many
 * attempts race, at most the limit are checked per account and per address in a window; and all of
 * it runs under one of `checks`' permits, which bound the hashes this process computes at once.
 */
export async function signIn(
  pool: DatabasePool,
  input: { email: string; password: string; ip: string | undefined },
  limits: SignInLimits,
  clock: Clock,
  checks: Semaphore,
): Promise<SignInResult> {
  const email = input.email.trim().toLowerCase();
  const subjects = [`email:${email}`, ...(input.ip ? [`ip:${input.ip}`] : [])];
  const attempt = { email, password: input.password, subjects };
  return (
    (await checks.run(() => check(pool, attempt, limits, clock))) ?? { kind: 'busy', retryAfterSeconds: 1 }
  );
}

async function check(
  pool: DatabasePool,
  attempt: Attempt,
  limits: SignInLimits,
  clock: Clock,
): Promise<SignInResult> {
  const slots = await takeSignInAttempt(pool, attempt.subjects, isoAt(clock), limits.windowSeconds);
  const over = slots.filter(
    (s) => s.failures > (s.subject.startsWith('email:') ? limits.perAccount : limits.perAddress),
  );
  if (over.length > 0) {
    // Refused unchecked, so not a failure: the other subject keeps its budget.
    await refundSignInAttempts(pool, slots);
    const endsAt =
      Math.max(...over.map((s) => Date.parse(s.window_started_at))) + limits.windowSeconds * 1000;
    return { kind: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil((endsAt - clock()) / 1000)) };
  }
  const matched = await verifyMembers(pool, attempt);
  // A failure keeps its slots: they are what the limits count.
  if (matched.length === 0) return { kind: 'failed' };
  await settleSuccess(pool, attempt.email, slots);
  return { kind: 'ok', email: attempt.email, memberIds: matched };
}

/** The member rows whose password matches (each hash checked: ~50 ms of argon2id). */
async function verifyMembers(pool: DatabasePool, attempt: Attempt): Promise<string[]> {
  const { email, password } = attempt;
  const members = email.length > 0 && email.length <= 320 ? await findMembersByEmail(pool, email) : [];
  if (members.length === 0) {
    // As long as a real check, so response times do not tell which emails have accounts.
    await verifyPassword(password, decoyHash);
    return [];
  }
  const matched: string[] = [];
  for (const member of members) {
    const { ok, needsRehash } = await verifyPassword(password, member.password_hash);
    if (!ok) continue;
    matched.push(member.id);
    if (needsRehash) await updateMemberPasswordHash(pool, member.id, await hashPassword(password));
  }
  return matched;
}

/** A success is no failure: the address gets its slot back, and the account's failures are forgotten. */
async function settleSuccess(
  pool: DatabasePool,
  email: string,
  slots: readonly SignInAttemptRow[],
): Promise<void> {
  const account = `email:${email}`;
  await pool.transaction(async (tx) => {
    await refundSignInAttempts(
      tx,
      slots.filter((s) => s.subject !== account),
    );
    await clearSignInFailures(tx, account);
  });
}
