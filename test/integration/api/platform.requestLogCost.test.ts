import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceRequestLog, listFilteredRequestLogs } from '../../../shared/db/queries/requestLogs.ts';
import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import type { OpenAiMock } from '../../helpers/openaiMock.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

// The request log's cost is the call's metering record's, whatever the outcome: answered, failed
// before or after a delta, cancelled by a client that left; sync and streamed; text and embeddings.
// Outcomes whose charge is settled after the answer went out (a cancellation) included.
let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
let server: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({
    env: {
      PROVIDER_TIMEOUT_MS: '1500',
      // One minor unit per output token, so every charge is above the 1-unit minimum and distinct.
      PRICES: JSON.stringify({ textInputPer1MTokens: 0, textOutputPer1MTokens: 1_000_000 }),
    },
    credits: 1_000_000,
    worker: true,
  }));
  server = await t.listen();
});
afterAll(() => t.close());

let calls = 0;
const nextRequestId = (name: string) => `req_cost_${name}_${++calls}`;

const post = (path: string, requestId: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${server.origin}${api(path)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...bearer(tenant.liveKey) },
    body: JSON.stringify(body),
    signal,
  });

const jobStatus = z.object({ status: z.string() });

/** The job's end (its metering record, if any, is written in the same transaction). */
const jobEnded = (requestId: string) =>
  waitUntil(async () => {
    const job = await t.deps.pool.maybeOne(sql.type(jobStatus)`
      select status from jobs where request_id = ${requestId}
    `);
    return job && job.status !== 'queued' && job.status !== 'running' && job.status !== 'cancelling'
      ? job.status
      : undefined;
  });

const metered = (requestId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ sum: z.number() }))`
    select coalesce(sum(cost_minor), 0)::int as sum from metering_records where request_id = ${requestId}
  `);

/** The cost the console shows for the call, in its list and on its own page. */
async function loggedCost(requestId: string): Promise<{ list: number; page: number }> {
  await t.deps.requestLog.flush();
  const row = await waitUntil(async () => {
    const rows = await listFilteredRequestLogs(
      t.deps.pool,
      tenant.workspaceId,
      {},
      { limit: 100, retentionDays: 30 },
    );
    return rows.find((r) => r.request_id === requestId);
  });
  const page = await findWorkspaceRequestLog(t.deps.pool, tenant.workspaceId, row.cursor_at, row.id);
  return { list: row.cost_minor, page: page!.cost_minor };
}

/** The logged cost equals the metered one, and the outcome was the one meant (`charged`: above zero). */
async function expectLoggedAsMetered(requestId: string, outcome: { status: string; charged: boolean }) {
  expect(await jobEnded(requestId)).toBe(outcome.status);
  const charge = await metered(requestId);
  expect(charge > 0).toBe(outcome.charged);
  expect(await loggedCost(requestId)).toEqual({ list: charge, page: charge });
}

describe('the request log shows what the metering record charged', () => {
  it('for an answered call, sync and streamed', async () => {
    const sync = nextRequestId('sync_ok');
    expect((await post('/text', sync, { prompt: 'hello' })).status).toBe(201);
    await expectLoggedAsMetered(sync, { status: 'succeeded', charged: true });

    const streamed = nextRequestId('stream_ok');
    const res = await post('/text', streamed, { prompt: 'hello', stream: true });
    expect((await readEvents(res)).at(-1)!.event).toBe('done');
    await expectLoggedAsMetered(streamed, { status: 'succeeded', charged: true });
  });

  it('for a call refused before its first delta (nothing charged), sync and streamed', async () => {
    mock.queueChat({ kind: 'status', status: 400, message: 'context length exceeded' });
    const sync = nextRequestId('sync_refused');
    expect((await post('/text', sync, { prompt: 'too long' })).status).toBe(500);
    await expectLoggedAsMetered(sync, { status: 'failed', charged: false });

    mock.queueChat({ kind: 'status', status: 400, message: 'context length exceeded' });
    const streamed = nextRequestId('stream_refused');
    const res = await post('/text', streamed, { prompt: 'too long', stream: true });
    expect((await readEvents(res)).map((e) => e.event)).toEqual(['error']);
    await expectLoggedAsMetered(streamed, { status: 'failed', charged: false });
  });

  it('for a stream that failed after a delta, billed for what it produced', async () => {
    mock.queueChat({ kind: 'streamError', words: 2, error: { message: 'upstream died mid-answer' } });
    const streamed = nextRequestId('stream_broken');
    const res = await post('/text', streamed, { prompt: 'tell me more', stream: true });
    const events = (await readEvents(res)).map((e) => e.event);
    expect([events[0], events.at(-1)]).toEqual(['delta', 'error']);
    await expectLoggedAsMetered(streamed, { status: 'cancelled', charged: true });

    // Sync, a failure after a delta that will not pass is failed and charged nothing.
    mock.queueChat({ kind: 'streamError', words: 2, error: { message: 'content filtered', code: 400 } });
    const sync = nextRequestId('sync_broken');
    expect((await post('/text', sync, { prompt: 'tell me more' })).status).toBe(500);
    await expectLoggedAsMetered(sync, { status: 'failed', charged: false });
  });

  it('for a client that left, streamed and sync: charged after its answer went out', async () => {
    mock.queueChat({ kind: 'hang', words: 3 });
    const controller = new AbortController();
    const streamed = nextRequestId('stream_left');
    const res = await post('/text', streamed, { prompt: 'a long story', stream: true }, controller.signal);
    let received = '';
    await readEvents(res, (event) => {
      if (event.event === 'delta') received += JSON.parse(event.data).text;
      return received.length > 0;
    });
    controller.abort();
    await expectLoggedAsMetered(streamed, { status: 'cancelled', charged: true });

    mock.queueChat({ kind: 'hang', words: 1 });
    const arrived = mock.nextRequest('/chat/completions');
    const leaving = new AbortController();
    const sync = nextRequestId('sync_left');
    const pending = post('/text', sync, { prompt: 'wait for me' }, leaving.signal).catch((e: unknown) => e);
    await arrived;
    leaving.abort();
    expect(await pending).toMatchObject({ name: 'AbortError' });
    await expectLoggedAsMetered(sync, { status: 'cancelled', charged: true });
    // Logged although no answer finished: the stream with the status it was sent, the sync call 499.
    expect((await loggedCall(t.deps.pool, streamed))!.status).toBe(201);
    expect((await loggedCall(t.deps.pool, sync))!.status).toBe(499);
  });

  it('for embeddings, answered and refused', async () => {
    const ok = nextRequestId('embed_ok');
    expect((await post('/embeddings', ok, { input: ['a', 'b'] })).status).toBe(201);
    await expectLoggedAsMetered(ok, { status: 'succeeded', charged: true });

    mock.failNext('/embeddings', 401, 'bad key');
    const refused = nextRequestId('embed_refused');
    expect((await post('/embeddings', refused, { input: ['a'] })).status).toBe(500);
    await expectLoggedAsMetered(refused, { status: 'failed', charged: false });
  });
});
