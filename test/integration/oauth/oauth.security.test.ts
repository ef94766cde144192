import { createHash, randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  consentFormFields,
  FormClient,
  type Harness,
  inputValue,
  password,
  type RegisteredApp,
  startHarness,
} from './harness.ts';

let h: Harness;
let app: RegisteredApp;
let client: FormClient;

beforeAll(async () => {
  h = await startHarness({ signInLimits: { perAccount: 3, perAddress: 1000, windowSeconds: 900 } });
  app = await h.registerApp({ redirectUris: ['https://app.example/cb', 'com.example.acme:/oauth'] });
  client = await h.signIn();
});
afterAll(() => h.close());

function params(overrides: Record<string, string | null> = {}): string {
  const base: Record<string, string> = {
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: 'https://app.example/cb',
    scope: 'tasks.read',
    state: 'xyz',
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
    code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === null) delete base[k];
    else base[k] = v;
  }
  return `/oauth/authorize?${new URLSearchParams(base).toString()}`;
}

describe('open redirects', () => {
  it('never redirects for an unknown client or an unregistered redirect_uri', async () => {
    const cases: Record<string, string | null>[] = [
      { client_id: 'svc_oc_unknown' },
      { client_id: null },
      { redirect_uri: 'https://evil.example/cb' },
      { redirect_uri: 'https://app.example/cb/../../evil' },
      { redirect_uri: 'https://app.example/cb?x=1' },
      { redirect_uri: 'https://APP.example/cb' },
      { redirect_uri: null },
    ];
    for (const bad of cases) {
      const res = await client.get(params(bad));
      expect({ bad, status: res.status, location: res.location }).toEqual({
        bad,
        status: 400,
        location: null,
      });
      expect(res.text).toContain('cannot be trusted');
    }
  });

  it('redirects other errors to the registered URI with error, error_description and state', async () => {
    const cases: [Record<string, string | null>, string][] = [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ code_challenge: null }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ scope: 'images.generate' }, 'invalid_scope'],
      [{ scope: 'files.upload' }, 'invalid_scope'],
    ];
    for (const [overrides, error] of cases) {
      const res = await client.get(params(overrides));
      expect(res.status).toBe(302);
      const to = new URL(res.location!);
      expect(`${to.origin}${to.pathname}`).toBe('https://app.example/cb');
      expect(to.searchParams.get('error')).toBe(error);
      expect(to.searchParams.get('error_description')).toEqual(expect.any(String));
      expect(to.searchParams.get('state')).toBe('xyz');
    }
  });

  it('refuses sensitive scopes to unverified apps, even when registered', async () => {
    const unverified = await h.registerApp({
      scopes: ['files.read', 'tasks.read'],
      redirectUris: ['https://app.example/cb'],
    });
    const res = await client.get(params({ client_id: unverified.clientId, scope: 'files.read' }));
    expect(new URL(res.location!).searchParams.get('error')).toBe('invalid_scope');
    const verified = await h.registerApp({
      scopes: ['files.read'],
      verified: true,
      redirectUris: ['https://app.example/cb'],
    });
    expect((await client.get(params({ client_id: verified.clientId, scope: 'files.read' }))).status).toBe(
      200,
    );
  });

  it('keeps sign-in inside this server whatever return_to says', async () => {
    const stranger = new FormClient(h.base);
    for (const returnTo of [
      'https://evil.example/',
      '//evil.example/x',
      '/oauth/authorize-evil',
      'javascript:alert(1)',
    ]) {
      const page = await stranger.get('/account/sign-in');
      const res = await stranger.post('/account/sign-in', {
        _csrf: inputValue(page.text, '_csrf'),
        return_to: returnTo,
        email: h.email,
        password,
      });
      expect({ returnTo, location: res.location }).toEqual({ returnTo, location: '/account' });
    }
  });
});

describe('CSRF', () => {
  async function consentFields(): Promise<Record<string, string>> {
    // prompt=consent: the page even where an earlier test's consent is remembered.
    const page = await client.get(params({ prompt: 'consent' }));
    expect(page.status).toBe(200);
    const fields: Record<string, string> = { decision: 'approve', member: h.tenant.memberId };
    for (const name of consentFormFields) {
      fields[name] = inputValue(page.text, name);
    }
    return fields;
  }

  it("refuses a consent POST without the form token or with another browser's", async () => {
    const fields = await consentFields();
    const { _csrf: _token, ...withoutToken } = fields;
    const none = await client.post('/oauth/authorize', withoutToken);
    expect({ status: none.status, location: none.location }).toEqual({ status: 403, location: null });
    const attacker = new FormClient(h.base);
    const attackerPage = await attacker.get('/account/sign-in');
    const forged = await client.post('/oauth/authorize', {
      ...fields,
      _csrf: inputValue(attackerPage.text, '_csrf'),
    });
    expect({ status: forged.status, location: forged.location }).toEqual({ status: 403, location: null });
    // The genuine form still works.
    const genuine = await client.post('/oauth/authorize', fields);
    expect(genuine.status).toBe(303);
    expect(new URL(genuine.location!).searchParams.get('code')).toMatch(/^svc_ac_/);
  });

  it('refuses a sign-in, sign-out or cut-off POST without the form token', async () => {
    expect((await client.post('/account/sign-in', { email: h.email, password })).status).toBe(403);
    expect((await client.post('/account/sign-out', {})).status).toBe(403);
    expect((await client.get('/account')).text).toContain('Your account');
    expect((await client.post('/account/apps/grt_x/revoke', {})).status).toBe(403);
  });

  it('refuses a workspace the person is not a member of', async () => {
    const fields = await consentFields();
    const res = await client.post('/oauth/authorize', { ...fields, member: 'mem_someone_else' });
    expect({ status: res.status, location: res.location }).toEqual({ status: 400, location: null });
  });

  it('sets the session cookie httpOnly and SameSite=Lax, and pages are never framed or cached', async () => {
    const page = await fetch(`${h.base}/account/sign-in`);
    const res = await fetch(`${h.base}/account/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: page.headers
          .getSetCookie()
          .map((c) => c.split(';')[0])
          .join('; '),
      },
      body: new URLSearchParams({
        _csrf: inputValue(await page.text(), '_csrf'),
        return_to: '/account',
        email: h.email,
        password,
      }).toString(),
    });
    const session = res.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!;
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Lax/);
    expect(session).not.toMatch(/Secure/); // PUBLIC_BASE_URL is http here
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-store');
  });
});

describe('sign-in throttling', () => {
  it('locks an account out after repeated failures, even with the right password', async () => {
    const guesser = new FormClient(h.base);
    const attempt = async (pass: string) => {
      const page = await guesser.get('/account/sign-in');
      return guesser.post('/account/sign-in', {
        _csrf: inputValue(page.text, '_csrf'),
        return_to: '/account',
        email: h.email.toUpperCase(),
        password: pass,
      });
    };
    for (let i = 0; i < 3; i++) expect((await attempt(`wrong ${i}`)).status).toBe(401);
    const locked = await attempt(password);
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('Too many failed attempts');
  });
});

describe('client metadata documents on private networks', () => {
  it('refuses a name resolving privately, a name that does not resolve and a private literal in the same words, naming no address', async () => {
    const anonymous = new FormClient(h.base);
    const page = async (clientId: string) => {
      const res = await anonymous.get(
        params({ client_id: clientId, redirect_uri: 'https://app.example/cb' }),
      );
      // The page as it would read for any client_id: what the visitor typed is echoed, nothing else differs.
      return {
        status: res.status,
        text: res.text.replaceAll(clientId, '<client_id>').replaceAll(/&amp;|&#\d+;/g, ''),
      };
    };
    // localhost resolves (to loopback); a name under .invalid never does (RFC 6761).
    const resolvesPrivately = await page('https://localhost/client.json');
    const doesNotResolve = await page('https://nothing-here.invalid/client.json');
    const literal = await page('https://10.20.30.40/client.json');
    expect(resolvesPrivately.status).toBe(400);
    expect(resolvesPrivately.text).toContain('has no public address');
    expect(resolvesPrivately.text).toMatch(/private/);
    expect(resolvesPrivately.text).not.toMatch(/127\.0\.0\.1|::1|ENOTFOUND|getaddrinfo|resolves to/);
    expect(doesNotResolve).toEqual(resolvesPrivately);
    expect(literal).toEqual(resolvesPrivately);
  });
});
