import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { z } from 'zod';

import { whileConnected } from '../../../api/http/clientGone.ts';
import { TextDeltaRelay } from '../../../api/sse/textDeltaRelay.ts';
import { streamTextJob } from '../../../api/sse/textStream.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newJobId } from '../../../shared/jobs/createJob.ts';
import { awaitSyncJob } from '../../../shared/jobs/syncJob.ts';
import type { WorkerHandle } from '../../../worker/startWorker.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, principalFor, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { readEvents } from '../../helpers/sse.ts';

/**
 * A worker can pick a test-key job up, publish its deltas and finish it before the api has the
 * answer of its own insert (the api's event loop or connection is the slow one). Here `start`
 * returns only once the job is done and its notifications have reached this process: whatever the
 * api listens for after the insert would be lost.
 */
let t: TestContext;
let tenant: Tenant;
let server: Awaited<ReturnType<typeof listenOnLoopback>>;
let worker: WorkerHandle;
let slowJobId: string | undefined;
const relayed: string[] = [];

const jobStatus = z.object({ status: z.string() });

const textJob = (id: string, prompt: string) => ({
  id,
  workspaceId: tenant.workspaceId,
  projectId: tenant.projectId,
  keyId: null,
  type: 'text.generate' as const,
  livemode: false,
  input: { prompt, maxTokens: 200, stream: true },
  holdId: null,
  requestId: null,
});

async function createAndFinish(jobId: string, prompt: string): Promise<void> {
  await t.deps.jobs.create(t.deps.pool, textJob(jobId, prompt));
  for (;;) {
    const job = await t.deps.pool.one(sql.type(jobStatus)`select status from jobs where id = ${jobId}`);
    if (job.status === 'succeeded') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  // A round trip on the LISTEN connection: notifications committed before it are delivered first.
  await t.deps.hub.notify('jobs:cancel', { id: 'job_probe' });
}

beforeAll(async () => {
  // Shorter than the waiter's 5 s safety re-read: a wait that missed the finish times out.
  t = await setupTestContext({ SYNC_TIMEOUT_MS: '3000' });
  tenant = await createTenant(t.deps.pool);
  worker = await t.startWorker();
  const relay = new TextDeltaRelay(t.deps.hub);
  // Records what reaches the stream through the relay (text the done event filled in would not).
  const on = relay.on.bind(relay);
  relay.on = (jobId, listener) =>
    on(jobId, (delta) => {
      relayed.push(delta.text);
      listener(delta);
    });
  // The stream takes one of its workspace's stream leases, as a request through the app would.
  const principal = await principalFor(t.deps.pool, tenant.testKey);
  await t.deps.hub.settled();
  const app = express();
  app.use(express.json());
  app.post('/stream', (req, res, next) => {
    req.requestId = 'req_quick';
    req.principal = principal;
    const prompt = (req.body as { prompt: string }).prompt;
    streamTextJob(
      t.deps,
      relay,
      req,
      res,
      (result) => result as { text: string },
      (id) => createAndFinish(id, prompt),
    ).catch(next);
  });
  app.post('/sync', (req, res, next) => {
    const prompt = (req.body as { prompt: string }).prompt;
    const id = newJobId();
    whileConnected(res, (signal) =>
      awaitSyncJob(t.deps, req, { id, start: () => createAndFinish(id, prompt) }, signal),
    )
      .then(({ result }) => res.status(201).json(result))
      .catch(next);
  });
  app.post('/slow-sync', (req, res, next) => {
    const prompt = (req.body as { prompt: string }).prompt;
    const id = newJobId();
    slowJobId = id;
    const start = async () => {
      await new Promise((r) => setTimeout(r, 300));
      await t.deps.jobs.create(t.deps.pool, textJob(id, prompt));
    };
    whileConnected(res, (signal) => awaitSyncJob(t.deps, req, { id, start }, signal))
      .then(({ result }) => res.status(201).json(result))
      .catch(next);
  });
  server = await listenOnLoopback(app);
});
afterAll(async () => {
  await server.close();
  await t.close();
});

const post = (path: string, prompt: string) =>
  fetch(`${server.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt }),
  });

describe('a worker quicker than the api', () => {
  it('still has its result handed over', async () => {
    const res = await post('/sync', 'Quick one');
    expect(res.status).toBe(201);
    expect(((await res.json()) as { text: string }).text).toContain('"Quick one"');
  });

  it('still has every delta relayed, in order, before done', async () => {
    const res = await post('/stream', 'Several words to stream back');
    expect(res.status).toBe(201);
    const events = await readEvents(res);
    const deltas = events
      .filter((e) => e.event === 'delta')
      .map((e) => JSON.parse(e.data) as { text: string });
    const done = events.filter((e) => e.event === 'done');
    expect(done).toHaveLength(1);
    expect(events.at(-1)!.event).toBe('done');
    // The fixture publisher sends the first word alone, then the rest coalesced: both were relayed,
    // though they arrived before the headers were out and so left as one delta.
    const text = (JSON.parse(done[0]!.data) as { text: string }).text;
    expect(relayed.length).toBeGreaterThan(1);
    expect(relayed.join('')).toBe(text);
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(deltas.map((d) => d.text).join('')).toBe(text);
  });

  it('survives a client that leaves while its job is still being created, and cancels that job', async () => {
    // With no worker to finish the job before the api hears the client left (a test-key job takes
    // a few milliseconds), the cancel has a queued job to mark, not a finished one to leave alone.
    await worker.stop();
    const controller = new AbortController();
    const leaving = fetch(`${server.origin}/slow-sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Gone soon' }),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 100);
    await expect(leaving).rejects.toThrow();
    const cancelled = z.object({ cancelled: z.boolean() });
    let job: z.infer<typeof cancelled> | null = null;
    for (let i = 0; i < 100 && !job?.cancelled; i++) {
      await new Promise((r) => setTimeout(r, 20));
      job = await t.deps.pool.maybeOne(sql.type(cancelled)`
          select cancel_requested_at is not null as cancelled from jobs where id = ${slowJobId!}
        `);
    }
    expect(job).toEqual({ cancelled: true });
    worker = await t.startWorker();
    expect((await post('/sync', 'Still here')).status).toBe(201);
  });
});
