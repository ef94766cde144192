import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const sessionRow = z.object({
  id: z.string(),
  email: z.string(),
  member_ids: z.array(z.string()),
  expires_at: z.string(),
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

const failureRow = z.object({ failures: z.number() });

/** Failures counted for `subject` in the window that is current at `now` (older windows count zero). */
export function countSignInFailures(db: Db, subjects: string[], now: string, windowSeconds: number) {
  return db.any(sql.type(failureRow.extend({ subject: z.string() }))`
    select subject, failures from sign_in_failures
    where subject = any(${sql.array(subjects, 'text')})
      and window_started_at > ${now}::timestamptz - make_interval(secs => ${windowSeconds})
  `);
}

export async function recordSignInFailure(db: Db, subjects: string[], now: string, windowSeconds: number) {
  await db.query(sql.typeAlias('void')`
    insert into sign_in_failures (subject, failures, window_started_at)
    select unnest(${sql.array(subjects, 'text')}::text[]), 1, ${now}
    on conflict (subject) do update set
      failures = case when sign_in_failures.window_started_at > ${now}::timestamptz - make_interval(secs => ${windowSeconds})
                      then sign_in_failures.failures + 1 else 1 end,
      window_started_at = case when sign_in_failures.window_started_at > ${now}::timestamptz - make_interval(secs => ${windowSeconds})
                               then sign_in_failures.window_started_at else excluded.window_started_at end
  `);
}

export async function clearSignInFailures(db: Db, subject: string): Promise<void> {
  await db.query(sql.typeAlias('void')`delete from sign_in_failures where subject = ${subject}`);
}
