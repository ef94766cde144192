import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { insertStaffMember } from '../../../shared/db/queries/staff.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId, randomBase62 } from '../../../shared/primitives/ids.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

const address = `stf_${randomBase62(24)}`;
let t: TestContext;
let tenant: Tenant;
let server: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant());
  await insertStaffMember(t.deps.pool, {
    id: newId('staff'),
    workspaceId: tenant.workspaceId,
    name: 'Intake',
    role: 'You triage incoming requests.',
    apiAddress: address,
    apiChannelEnabled: true,
  });
  server = await t.listen();
});
afterAll(() => t.close());

/** What the trigger answers: the task, or an error envelope. */
type Answer = { task: { id: string; title: string }; error: { code: string } };

const json = async (res: Response) => (await res.json()) as Answer;

/** POST `path` through supertest as the tenant's test key, with this Idempotency-Key. */
const postWithKey = (path: string, key: string, body: object) =>
  t.http
    .post(api(path))
    .set({ ...bearer(tenant.testKey), 'Idempotency-Key': key })
    .send(body);

function trigger(key: string | undefined, body: unknown) {
  return fetch(`${server.origin}${api(`/staff/${address}/trigger`)}`, {
    method: 'POST',
    headers: {
      ...bearer(tenant.testKey),
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
  });
}

const countTasks = () =>
  t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from tasks where workspace_id = ${tenant.workspaceId}
  `);

describe('Idempotency-Key on POST /staff/{address}/trigger', () => {
  it('creates exactly one task under 20 concurrent identical triggers', async () => {
    const before = await countTasks();
    const key = `order-${randomBase62(12)}`;
    const body = { input: 'Please process order 1234.', subject: 'Order 1234' };
    // Staggered by a few milliseconds: the later ones overlap the first request or arrive after it.
    const responses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 3));
        const res = await trigger(key, body);
        return {
          status: res.status,
          replayed: res.headers.get('idempotent-replayed'),
          body: await json(res),
        };
      }),
    );
    expect(await countTasks()).toBe(before + 1);

    const created = responses.filter((r) => r.status === 202);
    const inProgress = responses.filter((r) => r.status === 409);
    // Every answer is either the task (first or replayed) or "still running"; nothing else.
    expect(created.length + inProgress.length).toBe(20);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of inProgress) expect(r.body.error.code).toBe('idempotency_request_in_progress');
    const taskIds = new Set(created.map((r) => r.body.task.id));
    expect(taskIds.size).toBe(1);
    expect(created.filter((r) => r.replayed !== 'true')).toHaveLength(1);
    expect(created[0]!.body.task).toEqual({
      id: expect.stringMatching(/^task_/),
      title: 'Order 1234',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    // Once the first finished, a retry replays the stored answer verbatim.
    const replay = await trigger(key, body);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe(`/api/pub/v1/tasks/${created[0]!.body.task.id}`);
    expect(await replay.json()).toEqual(created[0]!.body);
    expect(await countTasks()).toBe(before + 1);

    // Same key, different body: refused, nothing created.
    const reused = await trigger(key, { ...body, input: 'Please process order 9999.' });
    expect(reused.status).toBe(409);
    expect((await json(reused)).error.code).toBe('idempotency_key_reused');
    expect(await countTasks()).toBe(before + 1);
  });

  it('treats key order in the body as the same request', async () => {
    const key = `order-${randomBase62(12)}`;
    const first = await trigger(key, { input: 'a', subject: 'b' });
    const second = await trigger(key, { subject: 'b', input: 'a' });
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect((await json(second)).task.id).toBe((await json(first)).task.id);
  });

  it('rejects keys outside 1 to 255 characters with invalid_idempotency_key', async () => {
    const before = await countTasks();
    for (const key of ['', 'k'.repeat(256)]) {
      const res = await postWithKey(`/staff/${address}/trigger`, key, { input: 'x' }).expect(400);
      expect(res.body.error.code).toBe('invalid_idempotency_key');
    }
    const ok = await trigger('k'.repeat(255), { input: 'x' });
    expect(ok.status).toBe(202);
    expect(await countTasks()).toBe(before + 1);
  });

  it('keeps keys per credential: another key may use the same value', async () => {
    const key = `shared-${randomBase62(12)}`;
    const mine = await trigger(key, { input: 'one' });
    const otherKey = await tenant.key({ livemode: false });
    const theirs = await fetch(`${server.origin}${api(`/staff/${address}/trigger`)}`, {
      method: 'POST',
      headers: { ...bearer(otherKey.secret), 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ input: 'one' }),
    });
    expect(theirs.status).toBe(202);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect((await json(theirs)).task.id).not.toBe((await json(mine)).task.id);
  });

  it('answers channel_route_not_found for an address nobody has', async () => {
    const key = `missing-${randomBase62(12)}`;
    const res = await fetch(`${server.origin}${api('/staff/stf_nobodyhere0000000000000/trigger')}`, {
      method: 'POST',
      headers: { ...bearer(tenant.testKey), 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ input: 'x' }),
    });
    expect(res.status).toBe(404);
    expect((await json(res)).error.code).toBe('channel_route_not_found');
  });

  it('also holds for POST /tasks and POST /tasks/{taskId}/messages: one task, one message, one reply job', async () => {
    const key = `create-${randomBase62(12)}`;
    const create = () => postWithKey('/tasks', key, { input: 'Once only.' }).expect(202);
    const first = await create();
    const again = await create();
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const taskId = first.body.task.id as string;

    // The same key on another path is another request: refused rather than confused with the first.
    const messages = `/tasks/${taskId}/messages`;
    const more = { input: 'And once more.' };
    const reusedOnOtherPath = await postWithKey(messages, key, more).expect(409);
    expect(reusedOnOtherPath.body.error.code).toBe('idempotency_key_reused');
    const otherKey = `send-${randomBase62(12)}`;
    const a = await postWithKey(messages, otherKey, more).expect(202);
    const b = await postWithKey(messages, otherKey, more).expect(202);
    expect(b.body.message.id).toBe(a.body.message.id);
    expect(b.headers['idempotent-replayed']).toBe('true');
    const counts = await t.deps.pool.one(sql.type(z.object({ messages: z.number(), jobs: z.number() }))`
      select (select count(*)::int from task_messages where task_id = ${taskId}) as messages,
             (select count(*)::int from jobs where input->>'taskId' = ${taskId}) as jobs
    `);
    expect(counts).toEqual({ messages: 2, jobs: 2 });
  });
});
