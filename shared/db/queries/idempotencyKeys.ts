import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const entryRow = z.object({
  request_hash: z.string(),
  status: z.enum(['in_progress', 'done']),
  response_status: z.number().nullable(),
  response_body: z.unknown(),
  response_location: z.string().nullable(),
  job_id: z.string().nullable(),
  output_delivered: z.boolean(),
  is_leased: z.boolean(),
  /** Whole seconds until the lease of the request holding the key ends (at least 1). */
  lease_left_seconds: z.number(),
});
export type IdempotencyEntry = z.infer<typeof entryRow>;

/** Who a key belongs to: keys are kept per credential. */
export type IdempotencyKeyRef = { credentialId: string; key: string };

/**
 * The live entry of a key (entries older than 24 h are gone as far as callers are concerned).
 * A fresh statement under READ COMMITTED: it sees what a concurrent request committed meanwhile.
 */
export function findIdempotencyEntry(db: Db, ref: IdempotencyKeyRef) {
  return db.maybeOne(sql.type(entryRow)`
    select request_hash, status, response_status, response_body, response_location, job_id,
           output_delivered, locked_until > now() as is_leased,
           greatest(1, ceil(extract(epoch from locked_until - now())))::int as lease_left_seconds
    from idempotency_keys
    where credential_id = ${ref.credentialId} and key = ${ref.key} and created_at > now() - interval '24 hours'
  `);
}

const claimedRow = z.object({ claimed: z.boolean() });

/**
 * Takes the key for this request inside the transaction that does its work (an entry older than 24 h
 * is replaced). A concurrent request with the same key waits here until this transaction ends, then
 * finds the key taken. `jobId` keys a synchronous job by the key, leased for `leaseSeconds`.
 * @returns false when the key is already taken (the caller's work must not happen).
 */
export async function claimIdempotencyKey(
  tx: Db,
  ref: IdempotencyKeyRef & { requestHash: string; jobId: string | null; leaseSeconds: number },
): Promise<boolean> {
  const claimed = await tx.maybeOneFirst(sql.type(claimedRow)`
    insert into idempotency_keys (credential_id, key, request_hash, job_id, locked_until)
    values (${ref.credentialId}, ${ref.key}, ${ref.requestHash}, ${ref.jobId},
            now() + make_interval(secs => ${ref.leaseSeconds}))
    on conflict (credential_id, key) do update
      set request_hash = excluded.request_hash, status = 'in_progress', response_status = null,
          response_body = null, response_location = null, job_id = excluded.job_id, output_delivered = false,
          locked_until = excluded.locked_until, created_at = now()
      where idempotency_keys.created_at <= now() - interval '24 hours'
    returning true as claimed
  `);
  return claimed === true;
}

/** The answer of the work (its status, body and Location), recorded in the work's transaction. */
export async function recordIdempotentAnswer(
  db: Db,
  ref: IdempotencyKeyRef,
  answer: { status: number; body: unknown; location: string | null; outputDelivered?: boolean },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update idempotency_keys
    set status = 'done', response_status = ${answer.status},
        response_body = ${sql.jsonb((answer.body ?? null) as never)}, response_location = ${answer.location},
        output_delivered = ${answer.outputDelivered ?? false}, locked_until = now()
    where credential_id = ${ref.credentialId} and key = ${ref.key}
  `);
}

/**
 * Records a refusal that did no work (a 4xx answered by the handler), unless the key was taken
 * meanwhile: the first answer stays the answer.
 */
export async function insertIdempotentRefusal(
  db: Db,
  ref: IdempotencyKeyRef & { requestHash: string; status: number; body: unknown },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    insert into idempotency_keys (credential_id, key, request_hash, status, response_status, response_body,
                                  locked_until)
    values (${ref.credentialId}, ${ref.key}, ${ref.requestHash}, 'done', ${ref.status},
            ${sql.jsonb((ref.body ?? null) as never)}, now())
    on conflict (credential_id, key) do nothing
  `);
}

/** Takes over the lease of an in-progress key whose waiting request is gone. False if still leased. */
export async function takeIdempotencyLease(db: Db, ref: IdempotencyKeyRef, leaseSeconds: number) {
  const taken = await db.maybeOneFirst(sql.type(claimedRow)`
    update idempotency_keys set locked_until = now() + make_interval(secs => ${leaseSeconds})
    where credential_id = ${ref.credentialId} and key = ${ref.key} and status = 'in_progress'
      and locked_until <= now()
    returning true as claimed
  `);
  return taken === true;
}

/** Extends the lease of the request still waiting on the key's job. */
export async function renewIdempotencyLease(db: Db, ref: IdempotencyKeyRef, leaseSeconds: number) {
  await db.query(sql.typeAlias('void')`
    update idempotency_keys set locked_until = now() + make_interval(secs => ${leaseSeconds})
    where credential_id = ${ref.credentialId} and key = ${ref.key} and status = 'in_progress'
  `);
}

/** The waiting request is gone: a retry with the key may take the job over at once. */
export async function releaseIdempotencyLease(db: Db, ref: IdempotencyKeyRef) {
  await db.query(sql.typeAlias('void')`
    update idempotency_keys set locked_until = now()
    where credential_id = ${ref.credentialId} and key = ${ref.key} and status = 'in_progress'
  `);
}

/** Forgets an in-progress key whose work failed on the server's side (5xx): a retry runs it anew. */
export async function deleteIdempotencyKey(db: Db, ref: IdempotencyKeyRef) {
  await db.query(sql.typeAlias('void')`
    delete from idempotency_keys
    where credential_id = ${ref.credentialId} and key = ${ref.key} and status = 'in_progress'
  `);
}

export async function deleteExpiredIdempotencyKeys(db: Db) {
  await db.query(
    sql.typeAlias('void')`delete from idempotency_keys where created_at < now() - interval '25 hours'`,
  );
}
