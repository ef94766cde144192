import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type supertest from 'supertest';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, principalFor, type Tenant } from '../../helpers/fixtures.ts';
import { waitForLockWaiters } from '../../helpers/locks.ts';

// No worker: replies stay queued, so a task holds exactly the messages a test sends.
let t: TestContext;
let tenant: Tenant;
let second: ReturnType<typeof supertest>;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  second = (await t.secondApp()).http;
});
afterAll(() => t.close());

type Msg = { id: string; text: string; createdAt: string };

async function newTask(): Promise<string> {
  const res = await postAs(t.http, tenant.testKey, '/tasks')
    .send({ title: 'Ordering', input: 'First.' })
    .expect(202);
  return res.body.task.id as string;
}

function send(http: ReturnType<typeof supertest>, taskId: string, input: string, idempotencyKey?: string) {
  const req = http.post(api(`/tasks/${taskId}/messages`)).set(bearer(tenant.testKey));
  if (idempotencyKey) req.set('Idempotency-Key', idempotencyKey);
  // then() starts the request now; the caller awaits its answer later.
  return req.send({ input }).then((res) => res);
}

/** The listing, checked against the numbering: "oldest first" means by number and by createdAt alike. */
async function listed(taskId: string): Promise<Msg[]> {
  const res = await t.http
    .get(api(`/tasks/${taskId}/messages`))
    .query({ limit: 100 })
    .set(bearer(tenant.testKey))
    .expect(200);
  const data = res.body.data as Msg[];
  const bySeq = await t.deps.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    select id from task_messages where task_id = ${taskId} order by seq
  `);
  expect(data.map((m) => m.id)).toEqual(bySeq);
  const times = data.map((m) => Date.parse(m.createdAt));
  expect(times).toEqual([...times].sort((a, b) => a - b));
  return data;
}

/** A transaction the test holds open on its own connection; `end` commits or rolls it back. */
async function held(statement: string, values: unknown[]) {
  const client = new pg.Client({ connectionString: t.databaseUrl });
  await client.connect();
  await client.query('begin');
  await client.query(statement, values);
  return {
    end: async (how: 'commit' | 'rollback') => {
      await client.query(how);
      await client.end();
    },
  };
}

describe('the messages of a task are listed oldest first, by number and by createdAt alike', () => {
  it('a message whose transaction began first but was numbered last is dated last', async () => {
    const taskId = await newTask();
    // The early message's transaction begins, then waits on its Idempotency-Key: the test holds an
    // uncommitted row for that key. Meanwhile a later message is numbered and committed. The
    // rollback lets the early one go on: numbered after the later one, its transaction older.
    const { credentialId } = await principalFor(t.deps.pool, tenant.testKey);
    const key = `order-${newId('x')}`;
    const barrier = await held(
      `insert into idempotency_keys (credential_id, key, request_hash, locked_until)
       values ($1, $2, 'held by the test', now() + interval '1 minute')`,
      [credentialId, key],
    );
    const early = send(t.http, taskId, 'Began first, numbered last.', key);
    await waitForLockWaiters(t.deps.pool, 1);
    expect((await send(t.http, taskId, 'Began second, numbered second.')).status).toBe(202);
    await barrier.end('rollback');
    expect((await early).status).toBe(202);
    const data = await listed(taskId);
    expect(data.map((m) => m.text)).toEqual([
      'First.',
      'Began second, numbered second.',
      'Began first, numbered last.',
    ]);
  });

  it('a burst sent through two api instances at once', async () => {
    const taskId = await newTask();
    // Every message of the burst queues behind the task's row lock (held here), then all go at once.
    const barrier = await held('select from tasks where id = $1 for update', [taskId]);
    const burst = Array.from({ length: 12 }, (_, i) =>
      send(i % 2 === 0 ? t.http : second, taskId, `Burst message ${i + 1}.`),
    );
    await waitForLockWaiters(t.deps.pool, burst.length);
    await barrier.end('commit');
    for (const res of await Promise.all(burst)) expect(res.status).toBe(202);
    expect(await listed(taskId)).toHaveLength(13);
  });
});
