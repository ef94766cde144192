import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const entry = z.object({
  request_hash: z.string(),
  status: z.enum(['in_progress', 'done']),
  response_status: z.number().nullable(),
  response_body: z.unknown(),
  response_location: z.string().nullable(),
  is_locked: z.boolean(),
  is_expired: z.boolean(),
});

export type IdempotencyClaim = { claimed: true } | ({ claimed: false } & z.infer<typeof entry>);

const claimedRow = z.object({ claimed: z.boolean() });

/**
 * Claims the key for this request, or returns the existing entry. An entry older than 24 h is
 * replaced, and so is an in-progress one whose process died (its lock ran out).
 *
 * The existing entry is read by a second statement on purpose: every part of one statement shares
 * its snapshot, so a select next to the insert can neither see the row that insert just wrote nor a
 * row a concurrent request committed while this insert waited on it (ON CONFLICT does wait). A fresh
 * statement under READ COMMITTED sees both. If the entry vanished in between (its first request
 * answered 5xx and released it), the claim is tried again.
 * @throws Error when the key keeps being released and re-taken (never expected in practice).
 */
export async function claimIdempotencyKey(
  db: Db,
  credentialId: string,
  key: string,
  requestHash: string,
  lockSeconds: number,
): Promise<IdempotencyClaim> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const claimed = await db.maybeOneFirst(sql.type(claimedRow)`
      insert into idempotency_keys (credential_id, key, request_hash, locked_until)
      values (${credentialId}, ${key}, ${requestHash}, now() + make_interval(secs => ${lockSeconds}))
      on conflict (credential_id, key) do update
        set request_hash = excluded.request_hash, status = 'in_progress', response_status = null,
            response_body = null, response_location = null, locked_until = excluded.locked_until, created_at = now()
        where idempotency_keys.created_at < now() - interval '24 hours'
           or (idempotency_keys.status = 'in_progress' and idempotency_keys.locked_until < now()
               and idempotency_keys.request_hash = excluded.request_hash)
      returning true as claimed
    `);
    if (claimed) return { claimed: true };
    const existing = await db.maybeOne(sql.type(entry)`
      select request_hash, status, response_status, response_body, response_location,
             locked_until > now() as is_locked, created_at < now() - interval '24 hours' as is_expired
      from idempotency_keys where credential_id = ${credentialId} and key = ${key}
    `);
    if (existing) return { claimed: false, ...existing };
  }
  throw new Error(`idempotency key ${key} could not be claimed or read`);
}

export async function completeIdempotencyKey(
  db: Db,
  credentialId: string,
  key: string,
  status: number,
  body: unknown,
  location: string | null,
) {
  await db.query(sql.typeAlias('void')`
    update idempotency_keys set status = 'done', response_status = ${status},
           response_body = ${sql.jsonb((body ?? null) as never)}, response_location = ${location}
    where credential_id = ${credentialId} and key = ${key}
  `);
}

export async function releaseIdempotencyKey(db: Db, credentialId: string, key: string) {
  await db.query(sql.typeAlias('void')`
    delete from idempotency_keys where credential_id = ${credentialId} and key = ${key} and status = 'in_progress'
  `);
}

export async function deleteExpiredIdempotencyKeys(db: Db) {
  await db.query(
    sql.typeAlias('void')`delete from idempotency_keys where created_at < now() - interval '25 hours'`,
  );
}
