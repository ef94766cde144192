import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  legacyScryptHash,
  passwordVerificationStats,
  resetPasswordVerificationPeak,
} from '../../../shared/auth/passwords.ts';
import { insertMember } from '../../../shared/db/queries/members.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import type { SamplerOptions, SamplerResult } from '../../helpers/latencySampler.ts';
import { type Spawned, spawnNode } from '../../helpers/processes.ts';
import { parseResponse } from '../../helpers/rawHttp.ts';
import { type Harness, inputValue, password, startHarness } from './harness.ts';

// Sign-in as a flood sees it: real listening servers, real argon2/scrypt, real PostgreSQL. Requests
// come from addresses of their own (X-Forwarded-For, trusted from loopback), so the per-address
// counts of one test never throttle another.

type Form = { cookie: string; csrf: string };
type Answer = { status: number; text: string; retryAfter: string | null; setCookies: string[] };

/** A browser that has just shown the sign-in form: its cookies and the form's token. */
async function openForm(base: string): Promise<Form> {
  const page = await fetch(`${base}/account/sign-in`);
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { cookie, csrf: inputValue(await page.text(), '_csrf') };
}

async function postSignIn(
  base: string,
  form: Form,
  fields: { email: string; password: string; from: string },
): Promise<Answer> {
  const res = await fetch(`${base}/account/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: form.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': fields.from,
    },
    body: new URLSearchParams({
      _csrf: form.csrf,
      return_to: '/account',
      email: fields.email,
      password: fields.password,
    }).toString(),
  });
  return {
    status: res.status,
    text: await res.text(),
    retryAfter: res.headers.get('retry-after'),
    setCookies: res.headers.getSetCookie(),
  };
}

const verifications = () => passwordVerificationStats().total;

/** A person who is a member of one workspace only: one hash per attempt. */
async function addPerson(h: Harness): Promise<string> {
  const email = `person-${newId('x').toLowerCase()}@example.com`;
  await insertMember(h.t.deps.pool, {
    id: newId('mem'),
    workspaceId: h.tenant.workspaceId,
    email,
    passwordHash: legacyScryptHash(password),
    hasDeveloperAccess: false,
  });
  return email;
}

describe('attempt slots (hashes in flight not bounded here)', () => {
  let h: Harness;
  let locked: string;
  beforeAll(async () => {
    h = await startHarness(
      { signInLimits: { perAccount: 10, perAddress: 20, windowSeconds: 900 } },
      { SIGN_IN_HASH_CONCURRENCY: '64' },
    );
    locked = await addPerson(h);
  });
  afterAll(() => h.close());

  it('30 parallel wrong sign-ins for one account run 10 verifications; the other 20 are throttled', async () => {
    const forms = await Promise.all(Array.from({ length: 30 }, () => openForm(h.base)));
    const before = verifications();
    const answers = await Promise.all(
      forms.map((form, i) =>
        postSignIn(h.base, form, { email: locked, password: `wrong ${i}`, from: `203.0.113.${i + 1}` }),
      ),
    );
    const ran = verifications() - before;
    const refused = answers.filter((a) => a.status === 401);
    const throttled = answers.filter((a) => a.status === 429);
    expect({ ran, refused: refused.length, throttled: throttled.length }).toEqual({
      ran: 10,
      refused: 10,
      throttled: 20,
    });
    for (const answer of throttled) {
      expect(answer.text).toContain('Too many failed attempts');
      // Until the 15-minute window this burst started ends.
      expect(Number(answer.retryAfter)).toBeGreaterThan(800);
      expect(Number(answer.retryAfter)).toBeLessThanOrEqual(900);
    }
  });

  it('counts failures only: a success or a throttled attempt leaves the address its budget', async () => {
    const from = '198.51.100.7';
    const other = await addPerson(h);
    const form = await openForm(h.base);
    const attempt = (email: string, pass: string) =>
      postSignIn(h.base, form, { email, password: pass, from });
    for (let i = 0; i < 19; i++) expect((await attempt(`nobody${i}@example.com`, 'x')).status).toBe(401);
    // The first test's account is locked: refused unchecked, and not counted against this address.
    for (let i = 0; i < 3; i++) expect((await attempt(locked, password)).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await attempt(other, password)).status).toBe(303);
    const before = verifications();
    expect((await attempt('nobody-twentieth@example.com', 'x')).status).toBe(401);
    expect(verifications() - before).toBe(1);
    const over = await attempt(other, password);
    expect({ status: over.status, checked: verifications() - before }).toEqual({ status: 429, checked: 1 });
  });
});

describe('hashes in flight per process, and the sign-in form token', () => {
  let h: Harness;
  let offsetMs = 0;
  beforeAll(async () => {
    h = await startHarness({ clock: () => Date.now() + offsetMs }, { SIGN_IN_HASH_CONCURRENCY: '2' });
  });
  afterAll(() => h.close());

  it('runs at most 2 verifications at once; beyond, answers 429 with Retry-After and the form kept', async () => {
    const forms = await Promise.all(Array.from({ length: 30 }, () => openForm(h.base)));
    resetPasswordVerificationPeak();
    const before = verifications();
    // Unknown emails from distinct addresses: each would be checked (against the decoy hash).
    const answers = await Promise.all(
      forms.map((form, i) =>
        postSignIn(h.base, form, { email: `ghost${i}@example.com`, password, from: `192.0.2.${i + 1}` }),
      ),
    );
    expect(passwordVerificationStats().peak).toBeLessThanOrEqual(2);
    const refused = answers.filter((a) => a.status === 401);
    const busy = answers.filter((a) => a.status === 429);
    expect(refused.length + busy.length).toBe(30);
    expect(verifications() - before).toBe(refused.length);
    expect(busy.length).toBeGreaterThan(0);
    for (const answer of busy) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.text).toContain('Too many sign-ins are being checked');
      expect(answer.text).toMatch(/name="email"[^>]*value="ghost\d+@example.com"/);
      expect(answer.text).toContain('name="_csrf"');
    }
  });

  it('refuses a sign-in form shown more than an hour ago, hashing nothing, and gives a fresh one', async () => {
    const email = await addPerson(h);
    const from = '192.0.2.200';
    const form = await openForm(h.base);
    offsetMs = 59 * 60_000;
    const before = verifications();
    const lastMinute = await postSignIn(h.base, form, { email, password: 'wrong', from });
    expect(lastMinute.status).toBe(401);
    offsetMs = 61 * 60_000;
    const expired = await postSignIn(h.base, form, { email, password, from });
    expect({ status: expired.status, checked: verifications() - before }).toEqual({
      status: 403,
      checked: 1,
    });
    expect(expired.text).toContain('This sign-in form expired or was not sent from this site');
    // The refused page's own form works, for the email typed.
    expect(expired.text).toContain(`value="${email}"`);
    const fresh = { cookie: form.cookie, csrf: inputValue(expired.text, '_csrf') };
    const signedIn = await postSignIn(h.base, fresh, { email, password, from });
    expect(signedIn.status).toBe(303);
    // Signing in ends the pre-sign-in session: its cookie is cleared.
    expect(signedIn.setCookies.some((c) => /^svc_signin=;.*Max-Age=0/.test(c))).toBe(true);
    offsetMs = 0;
  });

  it("refuses another browser's, a cookieless or a missing form token, hashing nothing", async () => {
    const email = await addPerson(h);
    const mine = await openForm(h.base);
    const theirs = await openForm(h.base);
    const before = verifications();
    const cases: [string, Form][] = [
      ['foreign', { cookie: mine.cookie, csrf: theirs.csrf }],
      ['no cookie', { cookie: '', csrf: mine.csrf }],
      ['no token', { cookie: mine.cookie, csrf: '' }],
    ];
    for (const [name, form] of cases) {
      const res = await postSignIn(h.base, form, { email, password, from: '192.0.2.201' });
      expect({ name, status: res.status }).toEqual({ name, status: 403 });
      expect(res.text).toContain('This sign-in form expired or was not sent from this site');
    }
    expect(verifications() - before).toBe(0);
  });
});

describe('a flood of sign-ins against an api process', () => {
  let t: TestContext;
  let tenant: Tenant;
  let api: Spawned;
  let origin: string;
  beforeAll(async () => {
    t = await setupTestContext();
    tenant = await createTenant(t.deps.pool);
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    // As deployed: its own process, production settings (no response validation), no embedded services.
    api = spawnNode('api/server.ts', {
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      PORT: String(port),
      PUBLIC_BASE_URL: origin,
      LOG_LEVEL: 'info',
      // GET /me is sampled every 10 ms: the workspace's rate limit is not what this test is about.
      RATE_LIMIT_PER_MINUTE: '1000000',
    });
    await api.waitFor(/api listening/);
    // Its request validators compile in the background for seconds after it listens: measured from
    // then on, the flood would be charged for start-up work.
    await cpuQuiet(api.child.pid!);
  }, 120_000);
  afterAll(async () => {
    await api.stop();
    await t.close();
  });

  it('keeps GET /me responsive while 200 sign-ins arrive at once (p99 against 200 forged ones)', async () => {
    const me = { url: `${origin}/api/pub/v1/me`, headers: { authorization: `Bearer ${tenant.liveKey}` } };
    const form = await openForm(origin);
    const otherBrowser = await openForm(origin);
    // 200 unknown emails from as many addresses (10.<batch>.x.y): on the old code each was hashed.
    const signIns = (batch: number, token: string) =>
      Array.from({ length: 200 }, (_, i) =>
        signInRequest(origin, form.cookie, token, {
          email: `flood${batch}-${i}@example.com`,
          password: `guess ${i}`,
          from: `10.${batch}.${Math.floor(i / 100)}.${(i % 100) + 1}`,
        }),
      );
    // The process's first bursts compile their code paths and grow its heap: a steady state is
    // what is measured, so one unmeasured burst of each kind first.
    await Promise.all(signIns(1, form.csrf).map((r) => rawExchange(origin, r)));
    await Promise.all(signIns(2, otherBrowser.csrf).map((r) => rawExchange(origin, r)));
    await cpuQuiet(api.child.pid!);
    const quiet = await sampleWhile(me, () => new Promise((resolve) => setTimeout(resolve, 1000)));
    // The control: the same 200 requests, byte for byte but for another browser's form token, so
    // each is read, parsed, checked and answered with the form (403) and nothing is hashed. What
    // they cost GET /me is what 200 connections at once cost this machine by themselves.
    const forged = await timedFlood(me, signIns(3, otherBrowser.csrf));
    expect(forged.statuses.filter((status) => status !== 403)).toEqual([]);
    await cpuQuiet(api.child.pid!);
    const flood = await timedFlood(me, signIns(4, form.csrf));
    expect(flood.statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    const summary = {
      quietP99: Math.round(percentile(quiet.latencies, 99)),
      forged: describeFlood(forged),
      signIns: { ...describeFlood(flood), checked: flood.statuses.filter((s) => s === 401).length },
      load: loadavg()[0],
    };
    console.log('GET /me during 200 sign-in requests at once (ms)', summary);
    expect(flood.me.latencies.length).toBeGreaterThanOrEqual(20);
    // The bar is 50 ms, which 200 connections at once exceed on a 2-core machine even when
    // nothing is hashed (the control; README). What sign-ins may add: the checks still admitted run
    // on at most one core fewer than the machine has, so reading the burst may take up to twice as
    // long (on 2 cores), plus 50 ms. On the old code every sign-in was hashed (p99 ~1 s here).
    expect(summary.signIns.p99).toBeLessThan(2 * summary.forged.p99 + 50);
  });
});

type Flood = { me: SamplerResult; statuses: number[]; ms: number };

/** Sends every prepared request at once, each on a connection of its own, sampling `me` meanwhile. */
async function timedFlood(
  me: { url: string; headers: Record<string, string> },
  requests: Buffer[],
): Promise<Flood> {
  let statuses: number[] = [];
  let ms = 0;
  const sampled = await sampleWhile(me, async () => {
    const started = performance.now();
    statuses = await Promise.all(requests.map((request) => rawExchange(me.url, request)));
    ms = performance.now() - started;
  });
  expect(sampled.statuses.filter((status) => status !== 200)).toEqual([]);
  return { me: sampled, statuses, ms };
}

function describeFlood(flood: Flood) {
  return {
    ms: Math.round(flood.ms),
    samples: flood.me.latencies.length,
    p50: Math.round(percentile(flood.me.latencies, 50)),
    p99: Math.round(percentile(flood.me.latencies, 99)),
  };
}

/** A sign-in POST as bytes on the wire, prepared before the flood (the client's work is not the server's). */
function signInRequest(
  origin: string,
  cookie: string,
  token: string,
  fields: { email: string; password: string; from: string },
) {
  const body = new URLSearchParams({ _csrf: token, return_to: '/account', ...fields }).toString();
  return Buffer.from(
    `POST /account/sign-in HTTP/1.1\r\nHost: ${new URL(origin).host}\r\nConnection: close\r\n` +
      `Cookie: ${cookie}\r\nX-Forwarded-For: ${fields.from}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** Sends one prepared request on a connection of its own; resolves with the answer's status. */
function rawExchange(origin: string, request: Buffer): Promise<number> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    // Connection: close, so the server ends the connection once it has answered.
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.once('error', reject);
    socket.once('close', () => {
      const answer = parseResponse(Buffer.concat(received));
      if (answer) resolve(answer.status);
      else reject(new Error('connection closed without an answer'));
    });
  });
}

/** GET `target` every 10 ms from a thread of its own for as long as `work` runs (latencySampler.ts). */
async function sampleWhile(
  target: { url: string; headers: Record<string, string> },
  work: () => Promise<unknown>,
): Promise<SamplerResult> {
  const workerData: SamplerOptions = { ...target, intervalMs: 10 };
  const sampler = new Worker(new URL('../../helpers/latencySampler.ts', import.meta.url), { workerData });
  try {
    sampler.postMessage('start');
    await once(sampler, 'message');
    await work();
    sampler.postMessage('stop');
    const [result] = (await once(sampler, 'message')) as [SamplerResult];
    return result;
  } finally {
    await sampler.terminate();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Resolves once process `pid` has used under 20 ms of CPU in half a second (start-up work done). */
async function cpuQuiet(pid: number): Promise<void> {
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    const before = cpuMs();
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (cpuMs() - before < 20) return;
    if (Date.now() > deadline) throw new Error('the api process never went quiet');
  }
}
