import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { authorize, codeExchange, type FormClient, type Harness, startHarness } from './harness.ts';

// Client ID Metadata Documents served by a local server that counts what it was asked for: the
// authorization endpoint's outbound fetches are observed where they land.
let h: Harness;
let docs: Server;
let docsBase: string;
const fetches = new Map<string, number>();
let browser: FormClient;

const redirectPath = '/cb';
const clientIdFor = (name: string) => `${docsBase}/clients/${name}.json`;

beforeAll(async () => {
  h = await startHarness({ clientMetadataFetch: { allowPrivate: true, allowHttp: true } });
  const port = await freePort();
  docsBase = `http://127.0.0.1:${port}`;
  docs = createServer((req, res) => {
    const path = req.url ?? '';
    fetches.set(path, (fetches.get(path) ?? 0) + 1);
    if (!path.startsWith('/clients/')) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        client_id: `${docsBase}${path}`,
        client_name: `Client ${path}`,
        redirect_uris: [`${docsBase}${redirectPath}`],
        token_endpoint_auth_method: 'none',
        scope: 'staff.list tasks.read offline_access',
      }),
    );
  }).listen(port, '127.0.0.1');
  await once(docs, 'listening');
  browser = await h.signIn();
});
afterAll(async () => {
  docs?.close();
  await h.close();
});

const fetchedTimes = (clientId: string) => fetches.get(new URL(clientId).pathname) ?? 0;

function authorizeUrl(clientId: string, challenge = 'x'.repeat(43), scope = 'staff.list'): URL {
  const url = new URL(`${h.base}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: `${docsBase}${redirectPath}`,
    scope,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  return url;
}

/** GET /oauth/authorize as an anonymous visitor from `address` (TRUST_PROXY trusts loopback by default). */
const visit = (clientId: string, address: string) =>
  fetch(authorizeUrl(clientId), { redirect: 'manual', headers: { 'x-forwarded-for': address } });

const metadataApps = (clientId: string) =>
  h.t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from oauth_apps where client_id = ${clientId}
  `);

describe('fetching client metadata documents', () => {
  it('spends the address budget of dynamic registration (30 an hour) on fetches, then answers 429 without fetching', async () => {
    const address = '203.0.113.7';
    const ids = Array.from({ length: 31 }, (_, i) => clientIdFor(`throttle-${i}`));
    for (const clientId of ids.slice(0, 30)) {
      const res = await visit(clientId, address);
      expect(res.status).toBe(200); // the sign-in page, the document having been fetched
      expect(fetchedTimes(clientId)).toBe(1);
    }
    const refused = await visit(ids[30]!, address);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('location')).toBeNull();
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(await refused.text()).toContain('Too many new apps');
    expect(fetchedTimes(ids[30]!)).toBe(0);
    // A cached document costs nothing; another address has its own budget.
    expect((await visit(ids[0]!, address)).status).toBe(200);
    expect(fetchedTimes(ids[0]!)).toBe(1);
    expect((await visit(ids[30]!, '203.0.113.8')).status).toBe(200);
    expect(fetchedTimes(ids[30]!)).toBe(1);
    // Looking a client up made no rows.
    for (const clientId of ids) expect(await metadataApps(clientId)).toBe(0);
  });

  it('caches documents least-recently-used: a full cache evicts one entry, not all of them', async () => {
    // 1,000 entries fit; the addresses only spread the fetches over budgets.
    let sent = 0;
    const from = () => `198.51.100.${Math.floor(sent++ / 30)}`;
    const kept = clientIdFor('lru-kept');
    const first = clientIdFor('lru-0');
    expect((await visit(first, from())).status).toBe(200);
    expect((await visit(kept, from())).status).toBe(200);
    // The earlier test's 31 entries plus these two are cached; fill up to exactly 1,000.
    const fillers = Array.from({ length: 1_000 - 33 }, (_, i) => clientIdFor(`lru-fill-${i}`));
    for (let i = 0; i < fillers.length; i += 20) {
      await Promise.all(
        fillers.slice(i, i + 20).map(async (clientId) => {
          const res = await visit(clientId, from());
          expect(res.status).toBe(200);
        }),
      );
    }
    // Used again: now the most recently used. Then one more document than fits.
    expect((await visit(kept, from())).status).toBe(200);
    expect((await visit(clientIdFor('lru-overflow'), from())).status).toBe(200);
    expect(fetchedTimes(kept)).toBe(1);
    // Still cached: no second fetch. What was used longest ago (the earlier test's first document) is gone.
    expect((await visit(kept, from())).status).toBe(200);
    expect(fetchedTimes(kept)).toBe(1);
    expect((await visit(first, from())).status).toBe(200);
    expect(fetchedTimes(first)).toBe(1);
    const oldest = clientIdFor('throttle-1');
    expect((await visit(oldest, from())).status).toBe(200);
    expect(fetchedTimes(oldest)).toBe(2);
  }, 60_000);
});

describe("a metadata-document app's row", () => {
  it('is made only when a person approves: none after the consent page or a refusal, then the code flow works', async () => {
    const clientId = clientIdFor('approved');
    const page = await browser.get(`/oauth/authorize${authorizeUrl(clientId).search}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`Allow Client /clients/approved.json to act for you?`);
    expect(await metadataApps(clientId)).toBe(0);

    const refused = await authorize(browser, authorizeUrl(clientId), {
      member: h.tenant.memberId,
      decision: 'refuse',
    });
    expect(refused.searchParams.get('error')).toBe('access_denied');
    expect(await metadataApps(clientId)).toBe(0);

    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const approved = await authorize(
      browser,
      authorizeUrl(clientId, challenge, 'staff.list offline_access'),
      {
        member: h.tenant.memberId,
      },
    );
    expect(await metadataApps(clientId)).toBe(1);
    const app = await h.t.deps.pool.one(
      sql.type(
        z.object({ name: z.string(), registration: z.string(), project_id: z.string().nullable() }),
      )`select name, registration, project_id from oauth_apps where client_id = ${clientId}`,
    );
    expect(app).toEqual({
      name: 'Client /clients/approved.json',
      registration: 'metadata',
      project_id: null,
    });

    const token = await h.postToken(
      codeExchange({
        code: approved.searchParams.get('code')!,
        redirectUri: `${docsBase}${redirectPath}`,
        verifier,
        clientId,
      }),
    );
    expect(token.status).toBe(200);
    const body = (await token.json()) as { access_token: string; refresh_token: string; scope: string };
    expect(body.scope).toBe('staff.list offline_access');
    const staff = await fetch(`${h.base}/api/pub/v1/staff`, {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(staff.status).toBe(200);
    // The next authorization finds the consent remembered through the row, and makes no second one.
    const again = await browser.get(`/oauth/authorize${authorizeUrl(clientId).search}`);
    expect(again.status).toBe(302);
    expect(new URL(again.location!).searchParams.get('code')).toMatch(/^svc_ac_/);
    expect(await metadataApps(clientId)).toBe(1);
  });
});
