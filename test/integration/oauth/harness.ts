import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';

import { afterAll, beforeAll } from '@jest/globals';

import { createApiServer } from '../../../api/http/apiServer.ts';
import { legacyScryptHash } from '../../../shared/auth/passwords.ts';
import { findMember, insertMember } from '../../../shared/db/queries/members.ts';
import { insertOauthApp } from '../../../shared/db/queries/oauthApps.ts';
import { insertWorkspace } from '../../../shared/db/queries/workspaces.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import type { OauthOptions } from '../../../shared/oauth/oauthOptions.ts';
import { newId, randomBase62, sha256 } from '../../../shared/primitives/ids.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

export const password = 'correct horse battery';

export type RegisteredApp = {
  id: string;
  clientId: string;
  clientSecret: string | null;
  redirectUri: string;
  name: string;
};

export type Harness = {
  t: TestContext;
  base: string;
  issuer: string;
  tenant: Tenant;
  email: string;
  /** A second workspace where the same person (same email and password) is a member. */
  second: { workspaceId: string; memberId: string; name: string };
  registerApp(
    options?: Partial<{
      scopes: string[];
      type: 'server' | 'public';
      verified: boolean;
      name: string;
      redirectUris: string[];
    }>,
  ): Promise<RegisteredApp>;
  /** Where a client sends the browser: `app` asking for `scope`, PKCE (S256) over `verifier`, and `extra`. */
  authorizeUrl(app: RegisteredApp, scope: string, verifier: string, extra?: Record<string, string>): URL;
  /** A browser signed in as the person; a refused sign-in stops the file's setup. */
  signIn(): Promise<FormClient>;
  /** POSTs `fields` as a form to the token endpoint, as an OAuth client does; `headers` add to it. */
  postToken(fields: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
};

/**
 * A real listening api (clients and Chromium need a socket), its PUBLIC_BASE_URL pointing at itself,
 * a person who is a member of two workspaces, and a way to register apps.
 */
export async function startHarness(
  oauth: OauthOptions = {},
  env: Record<string, string> = {},
): Promise<Harness> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await setupTestContext({ ...env, PUBLIC_BASE_URL: base }, { oauth });
  // Production's server, keep-alive included: Chromium and Playwright's request context reuse idle
  // connections across tests, which Node's default 5 s keep-alive closed under them (read ECONNRESET).
  const server: Server = createApiServer(t.app, t.deps.config.requestTimeoutMs).listen(port, '127.0.0.1');
  await once(server, 'listening');
  const tenant = await createTenant(t.deps.pool);
  const { email } = (await findMember(t.deps.pool, tenant.memberId))!;
  const otherWorkspace = await insertWorkspace(t.deps.pool, {
    id: newId('ws'),
    name: 'Second workspace',
    currency: 'USD',
    balanceMinor: 50_000,
    storageQuotaBytes: null,
    rateLimitPerMinute: null,
  });
  const otherMember = await insertMember(t.deps.pool, {
    id: newId('mem'),
    workspaceId: otherWorkspace.id,
    email,
    passwordHash: legacyScryptHash(password),
    hasDeveloperAccess: false,
  });
  return {
    t,
    base,
    issuer: `${base}/oauth`,
    tenant,
    email,
    second: { workspaceId: otherWorkspace.id, memberId: otherMember.id, name: 'Second workspace' },
    registerApp: async (o = {}) => {
      const type = o.type ?? 'server';
      const clientSecret = type === 'server' ? `svc_ocs_${randomBase62(40)}` : null;
      const clientId = `svc_oc_${randomBase62(24)}`;
      const redirectUri = o.redirectUris?.[0] ?? 'http://localhost:8123/callback';
      const name = o.name ?? 'Acme Sync';
      const row = await insertOauthApp(t.deps.pool, {
        id: newId('app'),
        projectId: tenant.projectId,
        workspaceId: tenant.workspaceId,
        name,
        clientId,
        clientSecretHash: clientSecret === null ? null : sha256(clientSecret),
        type,
        redirectUris: o.redirectUris ?? [redirectUri],
        scopes: o.scopes ?? ['tasks.create', 'tasks.read', 'staff.list', 'offline_access', 'openid'],
        verified: o.verified ?? false,
      });
      return { id: row.id, clientId, clientSecret, redirectUri, name };
    },
    authorizeUrl: (app, scope, verifier, extra = {}) => {
      const url = new URL(`${base}/oauth/authorize`);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        scope,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        ...extra,
      }).toString();
      return url;
    },
    signIn: async () => {
      const browser = new FormClient(base);
      const signedIn = await signInWith(browser, email);
      if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`);
      return browser;
    },
    postToken: (fields, headers = {}) =>
      fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(fields).toString(),
      }),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await t.close();
    },
  };
}

/** A cookie jar over fetch, for driving the pages without a browser (redirects are not followed). */
export class FormClient {
  private readonly cookies = new Map<string, string>();
  private readonly base: string;

  constructor(base: string) {
    this.base = base;
  }

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  }

  /** A cookie's value as the browser holds it (a session's, to look for it elsewhere). */
  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(
    path: string,
  ): Promise<{ status: number; text: string; location: string | null; headers: Headers }> {
    const res = await fetch(new URL(path, this.base), {
      redirect: 'manual',
      headers: { cookie: this.cookieHeader() },
    });
    this.remember(res);
    const { status, headers } = res;
    return { status, text: await res.text(), location: headers.get('location'), headers };
  }

  async post(
    path: string,
    fields: Record<string, string>,
  ): Promise<{ status: number; text: string; location: string | null }> {
    const res = await fetch(new URL(path, this.base), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    this.remember(res);
    return { status: res.status, text: await res.text(), location: res.headers.get('location') };
  }
}

/** The value of a hidden (or any) input in a page, unescaped. */
export function inputValue(page: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(page);
  if (!match) throw new Error(`no input ${name} in page:\n${page}`);
  return match[1]!
    .replaceAll('&amp;', '&')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>');
}

/** Signs in through the sign-in form. */
export async function signInWith(client: FormClient, email: string, pass = password) {
  const page = await client.get('/account/sign-in');
  return client.post('/account/sign-in', {
    _csrf: inputValue(page.text, '_csrf'),
    return_to: '/account',
    email,
    password: pass,
  });
}

/** The consent form's fields a browser posts back as the page filled them (decision and member aside). */
export const consentFormFields = [
  '_csrf',
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'code_challenge',
  'code_challenge_method',
  'state',
];

/**
 * The authorization endpoint as a browser walks it (signed in already): GET, then approve on the
 * consent page in the chosen workspace (unless consent is remembered). Returns the redirect.
 */
export async function authorize(
  client: FormClient,
  authorizeUrl: URL,
  options: { member?: string; decision?: 'approve' | 'refuse' } = {},
): Promise<URL> {
  const first = await client.get(authorizeUrl.pathname + authorizeUrl.search);
  if (first.status === 302) return new URL(first.location!);
  if (first.status !== 200) throw new Error(`authorize answered ${first.status}: ${first.text}`);
  const fields: Record<string, string> = {};
  for (const name of consentFormFields) {
    if (first.text.includes(`name="${name}"`)) fields[name] = inputValue(first.text, name);
  }
  fields.decision = options.decision ?? 'approve';
  fields.member = options.member ?? /name="member" value="([^"]+)"\s+checked/.exec(first.text)![1]!;
  const second = await client.post('/oauth/authorize', fields);
  if (second.status !== 303) throw new Error(`consent answered ${second.status}: ${second.text}`);
  return new URL(second.location!);
}

/**
 * The token form that trades an authorization code (PKCE) for tokens. A client that authenticates
 * with a header, or a public one, leaves out what it does not send.
 */
export function codeExchange(c: {
  code: string;
  redirectUri: string;
  verifier: string;
  clientId?: string;
  clientSecret?: string;
}): Record<string, string> {
  return {
    grant_type: 'authorization_code',
    code: c.code,
    redirect_uri: c.redirectUri,
    code_verifier: c.verifier,
    ...(c.clientId !== undefined && { client_id: c.clientId }),
    ...(c.clientSecret !== undefined && { client_secret: c.clientSecret }),
  };
}

/** A harness with its member signed in to the console in one browser, and that console's root path. */
type SignedInConsole = { h: Harness; client: FormClient; base: string };

export async function signedInConsole(env: Record<string, string> = {}): Promise<SignedInConsole> {
  const h = await startHarness({}, env);
  const client = new FormClient(h.base);
  const signedIn = await signInWith(client, h.email);
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`);
  return { h, client, base: `/console/${h.tenant.memberId}` };
}

/**
 * signedInConsole for a whole test file: set up before its tests and closed after them. The returned
 * object is filled in by then; read its fields inside the tests.
 */
export function signedInConsoleForFile(env: Record<string, string> = {}): SignedInConsole {
  const session = {} as SignedInConsole;
  beforeAll(async () => {
    Object.assign(session, await signedInConsole(env));
  });
  afterAll(() => session.h.close());
  return session;
}
