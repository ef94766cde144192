import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  legacyScryptHash,
  passwordVerificationStats,
  resetPasswordVerificationPeak,
} from '../../../shared/auth/passwords.ts';
import { insertMember } from '../../../shared/db/queries/members.ts';
import { newId } from '../../../shared/primitives/ids.ts';
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
