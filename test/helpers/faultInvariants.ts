import { z } from 'zod';

import { type DatabasePool, sql } from '../../shared/db/sql.ts';
import type { ObjectStore } from '../../shared/storage/objectStore.ts';
import type { Call } from './faultLoad.ts';

const count = z.object({ n: z.number() });

/** What is still unfinished in a workspace: jobs not ended, queue rows locked, holds not closed. */
export async function unfinished(pool: DatabasePool, workspaceId: string) {
  return pool.one(sql.type(
    z.object({
      jobs: z.number(),
      locked: z.number(),
      creditHolds: z.number(),
      reserved: z.number(),
      storageHolds: z.number(),
    }),
  )`
    select
      (select count(*) from jobs where workspace_id = ${workspaceId} and completed_at is null) as "jobs",
      (select count(*) from graphile_worker.jobs where locked_at is not null) as "locked",
      (select count(*) from credit_holds where workspace_id = ${workspaceId} and status = 'held') as "creditHolds",
      (select reserved_minor from workspaces where id = ${workspaceId}) as "reserved",
      (select count(*) from storage_reservations where workspace_id = ${workspaceId}) as "storageHolds"
  `);
}

export const isSettled = (u: Awaited<ReturnType<typeof unfinished>>) =>
  u.jobs === 0 && u.locked === 0 && u.creditHolds === 0 && u.reserved === 0 && u.storageHolds === 0;

/**
 * Every text call answered 201 was charged exactly once, at the cost it was told; no text job ran
 * without its Idempotency-Key's record (no work the client was not answered for and then repeated).
 * @returns figures for the closing report.
 */
export async function checkCharges(pool: DatabasePool, workspaceId: string, calls: Call[]) {
  const rows = await pool.any(sql.type(
    z.object({
      key: z.string(),
      job_id: z.string().nullable(),
      status: z.string().nullable(),
      records: z.number(),
      cost: z.number().nullable(),
    }),
  )`
    select k.key, k.job_id, j.status,
           (select count(*) from metering_records m where m.job_id = k.job_id) as records,
           (select sum(cost_minor) from metering_records m where m.job_id = k.job_id) as cost
    from idempotency_keys k left join jobs j on j.id = k.job_id
    where j.workspace_id = ${workspaceId} and j.type = 'text.generate'
  `);
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const problems: string[] = [];
  const answered = calls.filter((c) => c.kind === 'text' && c.final === 201);
  for (const call of answered) {
    const row = byKey.get(call.tag);
    const told = (call.body?.cost as { amount?: number } | undefined)?.amount;
    if (!row || row.records !== 1 || row.cost !== told || row.status !== 'succeeded') {
      problems.push(`${call.tag}: ${JSON.stringify(row)} told ${told}`);
    }
  }
  for (const row of rows) if (row.records > 1) problems.push(`${row.key} charged ${row.records} times`);
  const jobs = await pool.oneFirst(sql.type(count)`
    select count(*) as n from jobs where workspace_id = ${workspaceId} and type = 'text.generate'
  `);
  if (jobs !== rows.length) problems.push(`${jobs} text jobs for ${rows.length} idempotency keys`);
  const charged = rows.filter((r) => r.records === 1).length;
  return { problems, answered201: answered.length, charged };
}

/** The workspace's balance is what it was given less every metering record; nothing held. */
export async function checkBalance(pool: DatabasePool, workspaceId: string, credits: number) {
  const row = await pool.one(sql.type(z.object({ balance: z.number(), spent: z.number() }))`
    select w.balance_minor as balance,
           coalesce((select sum(cost_minor) from metering_records m where m.workspace_id = w.id), 0) as spent
    from workspaces w where w.id = ${workspaceId}
  `);
  return { ...row, expected: credits - row.spent };
}

/**
 * Every file row has its object, the workspace's storage use is the sum of its files, and every
 * upload answered 201 has its row.
 */
export async function checkFiles(pool: DatabasePool, store: ObjectStore, workspaceId: string, calls: Call[]) {
  const files = await pool.any(sql.type(
    z.object({ filename: z.string(), storage_key: z.string(), size_bytes: z.number() }),
  )`
    select filename, storage_key, size_bytes from files where workspace_id = ${workspaceId}
  `);
  const used = await pool.oneFirst(sql.type(count)`
    select storage_used_bytes as n from workspaces where id = ${workspaceId}
  `);
  const problems: string[] = [];
  for (const file of files) {
    const stat = await store.stat(file.storage_key);
    if (stat?.size !== file.size_bytes) problems.push(`${file.filename}: object ${JSON.stringify(stat)}`);
  }
  const names = new Set(files.map((f) => f.filename));
  const answered = calls.filter((c) => c.kind === 'upload' && c.final === 201);
  for (const call of answered) {
    if (!names.has(`${call.tag}.txt`)) problems.push(`${call.tag}: answered 201, no row`);
  }
  const sum = files.reduce((total, f) => total + f.size_bytes, 0);
  if (sum !== used) problems.push(`storage used ${used}, files ${sum}`);
  return { problems, files: files.length, answered201: answered.length };
}

/** The unfinished jobs of a workspace with their queue rows, for a failure's message. */
export async function describeUnfinished(pool: DatabasePool, workspaceId: string) {
  return pool.any(sql.type(z.object({}).passthrough())`
    select j.id, j.type, j.status, j.created_at, j.started_at, q.id as queue_id, q.locked_by, q.locked_at,
           q.attempts, q.max_attempts, q.run_at, q.last_error, q.queue_name
    from jobs j left join graphile_worker.jobs q on q.id = j.queue_job_id
    where j.workspace_id = ${workspaceId} and j.completed_at is null
    order by j.created_at
  `);
}

/** The jobs behind these Idempotency-Keys, with their timeline, for a failure's message. */
export async function describeKeys(pool: DatabasePool, keys: string[]) {
  return pool.any(sql.type(z.object({}).passthrough())`
    select k.key, k.status as key_status, k.created_at as key_at, j.id, j.status, j.created_at, j.started_at,
           j.completed_at, j.error
    from idempotency_keys k left join jobs j on j.id = k.job_id
    where k.key = any(${sql.array(keys, 'text')})
  `);
}
