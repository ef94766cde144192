import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { makeApp } from '../../../api/app.ts';
import type { StreamKind } from '../../../api/sse/openStreams.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback, type LoopbackServer } from '../../helpers/loopbackServer.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';
import { openRawSse } from '../../helpers/sse.ts';

let t: TestContext;
let tenant: Tenant;
let web: LoopbackServer;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  web = await t.listen();
});
afterAll(async () => {
  await t.close();
});

const scrape = async () => parseMetrics((await t.http.get('/metrics').expect(200)).text);

/** Resolves once this process counts `open` streams of `kind` (its `change` events, no polling). */
function streamsReach(kind: StreamKind, open: number): Promise<void> {
  const streams = t.deps.openStreams;
  if (streams.count(kind) === open) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      streams.off('change', onChange);
      reject(new Error(`${kind} streams did not reach ${open}`));
    }, 15_000);
    const onChange = (changed: StreamKind, now: number) => {
      if (changed !== kind || now !== open) return;
      clearTimeout(timer);
      streams.off('change', onChange);
      resolve();
    };
    streams.on('change', onChange);
  });
}

describe('svc_sse_streams', () => {
  it('counts open text and task streams, and forgets them when their clients go away', async () => {
    const task = await postAs(t.http, tenant.testKey, '/tasks').send({ input: 'Watch me.' });
    expect(task.status).toBe(202);
    const taskStream = await openRawSse(`${web.origin}${api(`/tasks/${task.body.task.id}/stream`)}`, {
      headers: bearer(tenant.testKey),
    });
    // No worker runs here: the text job waits, and its stream stays open until the client leaves.
    const textStream = await openRawSse(`${web.origin}${api('/text')}`, {
      method: 'POST',
      headers: { ...bearer(tenant.testKey), 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Stream me.', stream: true }),
    });
    expect([taskStream.status, textStream.status]).toEqual([200, 201]);
    const open = await scrape();
    expect(open.get('svc_sse_streams')?.type).toBe('GAUGE');
    expect(sampleValue(open, 'svc_sse_streams', { kind: 'task' })).toBe(1);
    expect(sampleValue(open, 'svc_sse_streams', { kind: 'text' })).toBe(1);

    taskStream.close();
    textStream.close();
    await Promise.all([streamsReach('task', 0), streamsReach('text', 0)]);
    const closed = await scrape();
    expect(closed.get('svc_sse_streams')?.samples).toEqual(
      expect.arrayContaining([
        { labels: { kind: 'task' }, value: 0, count: undefined },
        { labels: { kind: 'text' }, value: 0, count: undefined },
      ]),
    );
  });

  it('forgets a stream the server ends itself, at the end of its hold', async () => {
    // The same process's collaborators behind an app whose task streams are held 300 ms.
    const shortHold = await listenOnLoopback(makeApp({ ...t.deps, taskStream: { holdMs: 300 } }));
    try {
      const task = await postAs(t.http, tenant.testKey, '/tasks').send({ input: 'Brief.' });
      const opened = streamsReach('task', 1);
      const stream = await openRawSse(`${shortHold.origin}${api(`/tasks/${task.body.task.id}/stream`)}`, {
        headers: bearer(tenant.testKey),
      });
      expect(stream.status).toBe(200);
      await opened;
      expect(await stream.ended).toEqual({ complete: true });
      await streamsReach('task', 0);
      expect(sampleValue(await scrape(), 'svc_sse_streams', { kind: 'task' })).toBe(0);
    } finally {
      await shortHold.close();
    }
  });
});

describe('svc_db_pool_connections', () => {
  it("reports the api pool's idle, active and waiting connections within its size", async () => {
    await t.http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    const metrics = await scrape();
    const family = metrics.get('svc_db_pool_connections');
    expect(family?.type).toBe('GAUGE');
    const of = (state: string) => sampleValue(metrics, 'svc_db_pool_connections', { pool: 'api', state });
    for (const state of ['idle', 'active', 'waiting']) {
      expect(family?.samples.some((s) => s.labels.pool === 'api' && s.labels.state === state)).toBe(true);
      expect(of(state)).toBeGreaterThanOrEqual(0);
    }
    // The call just answered left at least one connection open; none is over the pool's size.
    expect(of('idle') + of('active')).toBeGreaterThanOrEqual(1);
    expect(of('idle') + of('active')).toBeLessThanOrEqual(t.config.databasePoolSize);
    expect(of('waiting')).toBe(0);
  });
});
