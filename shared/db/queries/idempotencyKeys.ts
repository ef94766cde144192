import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const entry = z.object({
  request_hash: z.string(),
  status: z.enum(['in_progress', 'done']),
  response_status: z.number().nullable(),
  response_body: z.unknown(),
  is_locked: z.boolean(),
  is_expired: z.boolean(),
});

/**
 * Claims the key for this request, or returns the existing entry. An entry older than 24 h is
 * replaced, and so is an in-progress one whose process died (its lock ran out).
 */
export function claimIdempotencyKey(db: Db, credentialId: string, key: string, requestHash: string, lockSeconds: number) {
  return db.one(sql.type(z.object({ claimed: z.boolean() }).and(entry.partial()))`
    with claimed as (
      insert into idempotency_keys (credential_id, key, request_hash, locked_until)
      values (${credentialId}, ${key}, ${requestHash}, now() + make_interval(secs => ${lockSeconds}))
      on conflict (credential_id, key) do update
        set request_hash = excluded.request_hash, status = 'in_progress', response_status = null,
            response_body = null, locked_until = excluded.locked_until, created_at = now()
        where idempotency_keys.created_at < now() - interval '24 hours'
           or (idempotency_keys.status = 'in_progress' and idempotency_keys.locked_until < now()
               and idempotency_keys.request_hash = excluded.request_hash)
      returning 1
    )
    select exists (select 1 from claimed) as claimed,
           k.request_hash, k.status, k.response_status, k.response_body,
           k.locked_until > now() as is_locked, k.created_at < now() - interval '24 hours' as is_expired
    from (select 1) one
    left join idempotency_keys k on k.credential_id = ${credentialId} and k.key = ${key}
  `);
}

export async function completeIdempotencyKey(db: Db, credentialId: string, key: string, status: number, body: unknown) {
  await db.query(sql.typeAlias('void')`
    update idempotency_keys set status = 'done', response_status = ${status},
           response_body = ${sql.jsonb((body ?? null) as never)}
    where credential_id = ${credentialId} and key = ${key}
  `);
}

export async function releaseIdempotencyKey(db: Db, credentialId: string, key: string) {
  await db.query(sql.typeAlias('void')`
    delete from idempotency_keys where credential_id = ${credentialId} and key = ${key} and status = 'in_progress'
  `);
}

export async function deleteExpiredIdempotencyKeys(db: Db) {
  await db.query(sql.typeAlias('void')`delete from idempotency_keys where created_at < now() - interval '25 hours'`);
}
