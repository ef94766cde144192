import type { DatabasePool } from 'slonik';

import { type Clock, isoAt } from '../clock.ts';
import {
  clearSignInFailures,
  countSignInFailures,
  recordSignInFailure,
} from '../db/queries/browserSessions.ts';
import { findMembersByEmail, updateMemberPasswordHash } from '../db/queries/members.ts';
import { decoyHash, hashPassword, verifyPassword } from '../passwords.ts';

/** Failed sign-ins allowed per window, per account (email) and per client address. */
export type SignInLimits = { perAccount: number; perAddress: number; windowSeconds: number };

export const defaultSignInLimits: SignInLimits = { perAccount: 10, perAddress: 100, windowSeconds: 15 * 60 };

export type SignInResult =
  { kind: 'ok'; email: string; memberIds: string[] } | { kind: 'failed' } | { kind: 'throttled' };

/**
 * Checks an email and password against every member row of that email (one per workspace): the
 * person is signed in to those whose password matches. Old scrypt hashes are verified and replaced by
 * argon2id. Counting failures before the check keeps a throttled guesser from learning anything.
 */
export async function signIn(
  pool: DatabasePool,
  input: { email: string; password: string; ip: string | undefined },
  limits: SignInLimits,
  clock: Clock,
): Promise<SignInResult> {
  const email = input.email.trim().toLowerCase();
  const subjects = [`email:${email}`, ...(input.ip ? [`ip:${input.ip}`] : [])];
  const now = isoAt(clock);
  const counts = await countSignInFailures(pool, subjects, now, limits.windowSeconds);
  for (const { subject, failures } of counts) {
    const limit = subject.startsWith('email:') ? limits.perAccount : limits.perAddress;
    if (failures >= limit) return { kind: 'throttled' };
  }
  const members = email.length > 0 && email.length <= 320 ? await findMembersByEmail(pool, email) : [];
  const matched: string[] = [];
  if (members.length === 0) {
    // As long as a real check, so response times do not tell which emails have accounts.
    await verifyPassword(input.password, decoyHash);
  }
  for (const member of members) {
    const { ok, needsRehash } = await verifyPassword(input.password, member.password_hash);
    if (!ok) continue;
    matched.push(member.id);
    if (needsRehash) await updateMemberPasswordHash(pool, member.id, await hashPassword(input.password));
  }
  if (matched.length === 0) {
    await recordSignInFailure(pool, subjects, now, limits.windowSeconds);
    return { kind: 'failed' };
  }
  await clearSignInFailures(pool, `email:${email}`);
  return { kind: 'ok', email, memberIds: matched };
}
