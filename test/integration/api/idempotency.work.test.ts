import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { makeWav } from '../../helpers/audio.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { mockReply, openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { type Spawned,spawnNode } from '../../helpers/processes.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
const processes: Spawned[] = [];

beforeAll(async () => {
  mock = await startOpenAiMock();
  ({ t, tenant } = await contextWithTenant({ env: openaiEnv(mock), credits: 100_000, worker: true }));
});
afterAll(async () => {
  for (const p of processes) await p.stop();
  await t.close();
  await mock.close();
});

/** Resolves once no request holds the key's lease (the one waiting on its job left). */
async function waitUntilReleased(key: string): Promise<void> {
  for (;;) {
    const leased = await t.deps.pool.maybeOneFirst(sql.type(z.object({ leased: z.boolean() }))`
      select locked_until > now() as leased from idempotency_keys where key = ${key}
    `);
    if (leased === false) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves once a request holds the key's lease (it is waiting on the key's job). */
async function waitUntilLeased(key: string): Promise<void> {
  for (;;) {
    const leased = await t.deps.pool.oneFirst(sql.type(z.object({ leased: z.boolean() }))`
      select locked_until > now() as leased from idempotency_keys where key = ${key}
    `);
    if (leased) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A gate the provider mock waits on: the generation finishes when the test opens it. */
function gate(): { open(): void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const tasksWithInput = (input: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*) as n from task_messages where text = ${input} and role = 'user'
  `);

/** POST /text's request as the live key, with this Idempotency-Key. */
const textRequest = (key: string, prompt: string) => ({
  method: 'POST',
  headers: { ...bearer(tenant.liveKey), 'content-type': 'application/json', 'idempotency-key': key },
  body: JSON.stringify({ prompt }),
});

describe('Idempotency-Key on a synchronous generation', () => {
  it('lets the retry of a client that left collect the same generation, run and billed once', async () => {
    const server = await listenOnLoopback(t.app);
    try {
      const provider = gate();
      mock.queueChat({ kind: 'ok', after: provider.opened });
      const send = (signal?: AbortSignal) =>
        fetch(`${server.origin}${api('/text')}`, {
          ...textRequest('left-then-retried', 'Write one line about queues.'),
          signal,
        });
      const leaving = new AbortController();
      const first = send(leaving.signal).catch(() => null);
      await mock.nextRequest('/chat/completions');
      leaving.abort();
      await first;
      // The retry takes the job over as soon as the first client is gone: no 409, no second generation.
      await waitUntilReleased('left-then-retried');
      const retry = send();
      await waitUntilLeased('left-then-retried');
      provider.open();
      const answer = await retry;
      expect(answer.status).toBe(201);
      const body = (await answer.json()) as { text: string; cost: { amount: number } };
      expect(body.text).toBe(mockReply('Write one line about queues.'));
      expect(body.cost.amount).toBeGreaterThan(0);
      const jobs = await t.deps.pool.anyFirst(sql.type(z.object({ job_id: z.string().nullable() }))`
        select job_id from idempotency_keys where key = 'left-then-retried'
      `);
      expect(jobs).toHaveLength(1);
      const metered = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*) as n from metering_records where job_id = ${jobs[0]!}
      `);
      expect(metered).toBe(1);
      // Delivered: a later replay does not generate again and keeps nothing of the output.
      const replay = await send();
      expect(replay.status).toBe(410);
      expect(((await replay.json()) as { error: { code: string } }).error.code).toBe(
        'idempotent_output_discarded',
      );
    } finally {
      await server.close();
    }
  });

  it('takes over the job of an api process that died while waiting on it', async () => {
    const port = await freePort();
    const api1 = spawnNode('api/server.ts', {
      ...openaiEnv(mock),
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      PORT: String(port),
      LOG_LEVEL: 'info',
    });
    processes.push(api1);
    await api1.waitFor(/api listening/);
    const provider = gate();
    mock.queueChat({ kind: 'ok', after: provider.opened });
    const request = textRequest('api-died', 'Survive a crash.');
    const first = fetch(`http://127.0.0.1:${port}${api('/text')}`, request).catch(() => null);
    await mock.nextRequest('/chat/completions');
    api1.child.kill('SIGKILL');
    await first;
    // While the dead process's lease lasts the key is in progress...
    const retry = () =>
      t.http
        .post(api('/text'))
        .set(bearer(tenant.liveKey))
        .set('Idempotency-Key', 'api-died')
        .send({ prompt: 'Survive a crash.' });
    const inProgress = await retry().expect(409);
    expect(inProgress.body.error.code).toBe('idempotency_request_in_progress');
    // ...for at most the lease's 15 s, which the answer tells the client to wait out...
    expect(Number(inProgress.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(inProgress.headers['retry-after'])).toBeLessThanOrEqual(15);
    // ...and once it ran out (no renewal from the dead process), a retry takes the job over.
    for (let leased = true; leased;) {
      leased = await t.deps.pool.oneFirst(sql.type(z.object({ leased: z.boolean() }))`
        select locked_until > now() as leased from idempotency_keys where key = 'api-died'
      `);
      if (leased) await new Promise((r) => setTimeout(r, 250));
    }
    // (supertest sends a request only once it is awaited or then-ed)
    const collected = retry().then((res) => res);
    await waitUntilLeased('api-died');
    provider.open();
    const done = await collected;
    expect(done.status).toBe(201);
    expect(done.body.text).toBe(mockReply('Survive a crash.'));
    const jobs = await t.deps.pool.anyFirst(sql.type(z.object({ job_id: z.string().nullable() }))`
      select job_id from idempotency_keys where key = 'api-died'
    `);
    const metered = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*) as n from metering_records where job_id = ${jobs[0]!}
    `);
    expect(metered).toBe(1);
  });
});

describe('Idempotency-Key on creates', () => {
  it('never commits work without its stored answer (a failure between them rolls both back)', async () => {
    // The stored answer fails to be written, as a crash right after the work would leave it.
    await t.deps.pool.query(sql.unsafe`
      create function refuse_answer() returns trigger language plpgsql as $$
      begin raise exception 'crash before the answer is stored'; end; $$
    `);
    await t.deps.pool.query(sql.unsafe`
      create trigger refuse_answer before update on idempotency_keys for each row
      when (new.status = 'done') execute function refuse_answer()
    `);
    const input = 'Work that must happen exactly once.';
    const send = () =>
      t.http
        .post(api('/tasks'))
        .set(bearer(tenant.testKey))
        .set('Idempotency-Key', 'crash-after-commit')
        .send({ input });
    try {
      await send().expect(500);
    } finally {
      await t.deps.pool.query(sql.unsafe`drop trigger refuse_answer on idempotency_keys`);
      await t.deps.pool.query(sql.unsafe`drop function refuse_answer()`);
    }
    expect(await tasksWithInput(input)).toBe(0);
    const retried = await send().expect(202);
    const replayed = await send().expect(202);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toEqual(retried.body);
    expect(await tasksWithInput(input)).toBe(1);
  });

  it("replays a stored refusal with the replaying request's own requestId", async () => {
    const send = (requestId: string) =>
      t.http
        .post(api('/tasks'))
        .set(bearer(tenant.testKey))
        .set('Idempotency-Key', 'refused-once')
        .set('x-request-id', requestId)
        .send({ input: 'For a staff member that does not exist.', staffId: 'stf_missing' })
        .expect(404);
    const first = await send('first-request-1');
    expect(first.body.error).toMatchObject({ code: 'not_found', requestId: 'first-request-1' });
    const again = await send('second-request-2');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['x-request-id']).toBe('second-request-2');
    expect(again.body.error).toEqual({ ...first.body.error, requestId: 'second-request-2' });
  });
});

describe('Idempotency-Key on POST /transcriptions', () => {
  const transcribe = (key: string, audio: Buffer) =>
    t.http
      .post(api('/transcriptions'))
      .set(bearer(tenant.testKey))
      .set('Idempotency-Key', key)
      .attach('audio', audio, { filename: 'clip.wav', contentType: 'audio/wav' });

  it('transcribes once per key and audio, and refuses the key with other audio', async () => {
    const audio = makeWav(1);
    const first = await transcribe('one-clip', audio).expect(201);
    expect(first.body.text).toEqual(expect.any(String));
    const replay = await transcribe('one-clip', audio).expect(410);
    expect(replay.body.error.code).toBe('idempotent_output_discarded');
    const other = await transcribe('one-clip', makeWav(2)).expect(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    const jobs = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*) as n from jobs where type = 'transcriptions.create' and request_id = ${first.headers['x-request-id']!}
    `);
    expect(jobs).toBe(1);
  });

  it('answers invalid_idempotency_key for a key over 255 characters', async () => {
    const res = await transcribe('k'.repeat(256), makeWav(1)).expect(400);
    expect(res.body.error.code).toBe('invalid_idempotency_key');
  });
});
