import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { makeApp } from '../../../api/app.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { taskReply } from '../../../worker/tasks/task__reply.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import {
  listenApp,
  openSse,
  type StandaloneWorker,
  startStandaloneWorker,
  waitUntil,
} from './tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let a: Awaited<ReturnType<typeof listenApp>>;
let b: Awaited<ReturnType<typeof listenApp>>;
let worker: StandaloneWorker;
let second: Awaited<ReturnType<TestContext['secondApp']>>;

const streamOptions = { holdMs: 5000, heartbeatMs: 1000 };

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  second = await t.secondApp();
  // Two api instances: separate pools and separate LISTEN connections on one database.
  a = await listenApp(makeApp({ ...t.deps, taskStream: streamOptions }));
  b = await listenApp(makeApp({ ...second.deps, taskStream: streamOptions }));
  // A third party: the worker, with its own pool and LISTEN connection.
  worker = await startStandaloneWorker(t, (ctx) => ({ task__reply: jobTask(ctx, taskReply(ctx)) }));
});
afterAll(async () => {
  await a.close();
  await b.close();
  await worker.stop();
  await t.close();
});

/** POSTs `{ input }` to the public API's `path` on the instance at `origin`, as the tenant's test key. */
const postInput = (origin: string, path: string, input: string) =>
  fetch(`${origin}${api(path)}`, {
    method: 'POST',
    headers: { ...bearer(tenant.testKey), 'content-type': 'application/json' },
    body: JSON.stringify({ input }),
  });

describe('two api instances streaming one task', () => {
  it('both deliver the reply a separate worker produced, with the same cursor', async () => {
    const created = await postInput(a.origin, '/tasks', 'First question.');
    expect(created.status).toBe(202);
    const taskId = ((await created.json()) as { task: { id: string } }).task.id;
    // Let the first reply land, so the streams below start after it.
    await waitUntil(async () => {
      const res = await t.http.get(api(`/tasks/${taskId}/messages`)).set(bearer(tenant.testKey));
      return res.body.data.length === 2 ? true : undefined;
    });

    const path = api(`/tasks/${taskId}/stream`);
    const onA = await openSse(`${a.origin}${path}`, bearer(tenant.testKey));
    const onB = await openSse(`${b.origin}${path}`, bearer(tenant.testKey));
    const sent = await postInput(b.origin, `/tasks/${taskId}/messages`, 'Second question.');
    expect(sent.status).toBe(202);

    const fromA = await onA.waitFor((e) => e.event === 'message');
    const fromB = await onB.waitFor((e) => e.event === 'message');
    expect(fromA).toEqual(fromB);
    expect(fromA.data).toMatchObject({
      role: 'assistant',
      text: expect.stringContaining('Second question.'),
    });

    // The two instances heard the reply on their own LISTEN connections.
    expect(t.deps.hub.backendPid).not.toBe(second.deps.hub.backendPid);

    // A cursor from instance a resumes on instance b: nothing is repeated. Replies are streamed in
    // order, so the next reply is the marker: a repeat of the old one would have come before it.
    onA.close();
    const resumed = await openSse(
      `${b.origin}${path}?cursor=${encodeURIComponent(fromA.id!)}`,
      bearer(tenant.testKey),
    );
    const third = await postInput(a.origin, `/tasks/${taskId}/messages`, 'Third question.');
    expect(third.status).toBe(202);
    const next = await resumed.waitFor((e) => e.event === 'message');
    expect(next.data).toMatchObject({ role: 'assistant', text: expect.stringContaining('Third question.') });
    expect(resumed.events.filter((e) => e.event === 'message')).toEqual([next]);
    resumed.close();
    onB.close();
  });
});
