import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

const sessionRow = z.object({
  id: z.string(),
  email: z.string(),
  member_ids: z.array(z.string()),
  expires_at: isoTimestamp,
});
export type BrowserSessionRow = z.infer<typeof sessionRow>;

export async function insertBrowserSession(
  db: Db,
  s: {
    id: string;
    secretHash: Buffer;
    email: string;
    memberIds: string[];
    ip: string | null;
    userAgent: string | null;
    expiresAt: string;
  },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    insert into browser_sessions (id, secret_hash, email, member_ids, ip, user_agent, expires_at)
    values (${s.id}, ${sql.binary(s.secretHash)}, ${s.email}, ${sql.array(s.memberIds, 'text')}, ${s.ip},
            ${s.userAgent}, ${s.expiresAt})
  `);
}

/** The live session for a cookie secret's hash, with only the member rows that still exist. */
export function findBrowserSession(db: Db, secretHash: Buffer, now: string) {
  return db.maybeOne(sql.type(sessionRow)`
    select s.id, s.email, s.expires_at,
           coalesce(array(select m.id from members m where m.id = any(s.member_ids) order by m.created_at, m.id),
                    '{}') as member_ids
    from browser_sessions s
    where s.secret_hash = ${sql.binary(secretHash)} and s.expires_at > ${now}
  `);
}

export async function deleteBrowserSession(db: Db, sessionId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`delete from browser_sessions where id = ${sessionId}`);
}

/** Signs a member out everywhere (operator CLI); returns how many sessions ended. */
export async function deleteMemberSessions(db: Db, memberId: string): Promise<number> {
  const rows = await db.any(sql.typeAlias('id')`
    delete from browser_sessions where ${memberId} = any(member_ids) returning id
  `);
  return rows.length;
}

const attemptRow = z.object({ subject: z.string(), failures: z.number(), window_started_at: isoTimestamp });
export type SignInAttemptRow = z.infer<typeof attemptRow>;

/**
 * Takes one attempt's slot for every subject at once, before any password is checked: each count
 * goes up by one in the window current at `now` (an older window starts over at 1), and the counts
 * after the increment come back. Row locks make concurrent attempts take consecutive counts, so
 * however many race, only the first `limit` see a count within it. An attempt counts as a failure
 * until it is refunded (throttled) or its subject cleared (success).
 */
export function takeSignInAttempt(db: Db, subjects: string[], now: string, windowSeconds: number) {
  // Rows in subject order, every statement alike: two attempts never wait on each other's rows crosswise.
  return db.many(sql.type(attemptRow)`
    insert into sign_in_failures (subject, failures, window_started_at)
    select subject, 1, ${now} from unnest(${sql.array(subjects, 'text')}) as subject order by subject
    on conflict (subject) do update set
      failures = case when sign_in_failures.window_started_at > ${now}::timestamptz - make_interval(secs => ${windowSeconds})
                      then sign_in_failures.failures + 1 else 1 end,
      window_started_at = case when sign_in_failures.window_started_at > ${now}::timestamptz - make_interval(secs => ${windowSeconds})
                               then sign_in_failures.window_started_at else excluded.window_started_at end
    returning subject, failures, window_started_at
  `);
}

/** Gives back slots taken by takeSignInAttempt, each only while its window is still the current one. */
export async function refundSignInAttempts(db: Db, slots: readonly SignInAttemptRow[]): Promise<void> {
  if (slots.length === 0) return;
  const subjects = sql.array(
    slots.map((s) => s.subject),
    'text',
  );
  const windows = sql.array(
    slots.map((s) => s.window_started_at),
    'timestamptz',
  );
  await db.query(sql.typeAlias('void')`
    update sign_in_failures f set failures = f.failures - 1
    from unnest(${subjects}, ${windows}) as taken(subject, window_started_at)
    where f.subject = taken.subject and f.window_started_at = taken.window_started_at and f.failures > 0
  `);
}

export async function clearSignInFailures(db: Db, subject: string): Promise<void> {
  await db.query(sql.typeAlias('void')`delete from sign_in_failures where subject = ${subject}`);
}
