import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser, Page } from 'playwright-core';

import { commands } from '../../../cli/admin.ts';
import { findOauthAppByClientId } from '../../../shared/db/queries/oauthApps.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import {
  defaultMetadataFetch,
  fetchClientMetadataDocument,
} from '../../../shared/oauth/clientMetadataDocument.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { launchChromium } from '../../../worker/render/chromium.ts';
import { codeExchange, type Harness, password, startHarness } from '../oauth/harness.ts';

// An MCP client that knows nothing but the server's URL: the 401 leads it to the protected resource
// metadata, then the authorization server's metadata, dynamic registration and PKCE; the person
// consents in Chromium on the real pages.
let h: Harness;
let browser: Browser;
let callback: Server;
let callbackPort: number;
let page: Page;
const documents = new Map<string, string>();
const fetchedDocuments: string[] = [];
let mcpBoundToken: { access: string; refresh: string; clientId: string };

const scopes = [
  'tasks.create',
  'tasks.read',
  'tasks.listMessages',
  'tasks.sendMessage',
  'staff.list',
  'workflows.run',
  'brain.search',
  'offline_access',
];

class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  get redirectUrl() {
    return `http://127.0.0.1:${callbackPort}/callback`;
  }
  get clientMetadata() {
    return {
      client_name: 'SDK test client',
      // Registered without a port: a native app's loopback redirect may come back on any (RFC 8252).
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: scopes.join(' '),
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const mcpUrl = () => new URL(`${h.base}/api/pub/v1/mcp`);

beforeAll(async () => {
  // Client metadata documents are served by the test's loopback server, over http.
  h = await startHarness({ clientMetadataFetch: { allowPrivate: true, allowHttp: true } });
  callbackPort = await freePort();
  callback = createServer((req, res) => {
    const doc = documents.get(req.url ?? '');
    if (doc !== undefined) {
      fetchedDocuments.push(req.url!);
      res.writeHead(200, { 'content-type': 'application/json' }).end(doc);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>Back at the client.</p>');
  }).listen(callbackPort, '127.0.0.1');
  await once(callback, 'listening');
  await commands['brain add-page']!.run(h.t.deps.pool, {
    workspace: h.tenant.workspaceId,
    title: 'Holiday policy',
    body: 'Everyone gets thirty days of holiday each year.',
  });
  // These pages come from a local server: the browser needs the machine's network.
  ({ browser } = await launchChromium({ logger: createLogger('silent', 'test-browser'), network: true }));
});
afterAll(async () => {
  await browser?.close();
  callback?.close();
  await h.close();
});

/** Redeems the code on the redirect `page` landed on (authorization_code with PKCE) for an access token. */
async function redeemCode(
  landedOn: string,
  app: { redirectUri: string; verifier: string; clientId: string },
): Promise<string> {
  const res = await h.postToken(
    codeExchange({
      code: new URL(landedOn).searchParams.get('code')!,
      redirectUri: app.redirectUri,
      verifier: app.verifier,
      clientId: app.clientId,
    }),
  );
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('an MCP client authorizing itself', () => {
  it('discovers, registers, gets consent in Chromium, and calls the tools with its token', async () => {
    const provider = new MemoryProvider();
    const first = new Client({ name: 'sdk-oauth', version: '1.0.0' });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    // Registered by itself: a public, unverified app in no project.
    const clientId = provider.info!.client_id;
    const app = await findOauthAppByClientId(h.t.deps.pool, clientId);
    expect(app).toMatchObject({ type: 'public', verified: false, registration: 'dynamic', project_id: null });
    const url = provider.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${h.base}/oauth/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(mcpUrl().toString());
    // It asked for the scopes the resource metadata lists: the tools an unverified app may use.
    expect(url.searchParams.get('scope')!.split(' ').sort()).toEqual([
      'offline_access',
      'staff.list',
      'tasks.create',
      'tasks.listMessages',
      'tasks.read',
      'tasks.sendMessage',
    ]);

    page = await (await browser.newContext()).newPage();
    await page.goto(url.toString());
    await page.fill('#email', h.email);
    await page.fill('#password', password);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/oauth\/authorize\?/);
    await page.getByLabel('Test workspace').check();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`http://127.0.0.1:${callbackPort}/callback?**`);
    const code = new URL(page.url()).searchParams.get('code')!;

    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
    await transport.finishAuth(code);
    expect(provider.saved!.access_token).toMatch(/^svc_at_/);
    const client = new Client({ name: 'sdk-oauth', version: '1.0.0' });
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'create_task',
      'get_task',
      'list_projects',
      'list_staff',
      'list_task_messages',
      'send_task_message',
    ]);
    const projects = await client.callTool({ name: 'list_projects', arguments: {} });
    expect((projects.structuredContent as { projects: { id: string }[] }).projects.map((p) => p.id)).toEqual([
      h.tenant.projectId,
    ]);
    const created = await client.callTool({
      name: 'create_task',
      arguments: { input: 'From an MCP client.' },
    });
    expect(created.isError).toBe(false);
    const taskId = (created.structuredContent as { task: { id: string } }).task.id;
    const read = await client.callTool({ name: 'get_task', arguments: { taskId } });
    expect(read.isError).toBe(false);
    const sent = await client.callTool({ name: 'send_task_message', arguments: { taskId, input: 'More.' } });
    expect(sent.isError).toBe(false);
    const messages = await client.callTool({ name: 'list_task_messages', arguments: { taskId } });
    expect((messages.structuredContent as { data: unknown[] }).data).toHaveLength(2);
    const staff = await client.callTool({ name: 'list_staff', arguments: {} });
    expect(staff.isError).toBe(false);
    // Brain search is sensitive: not granted to an unverified app, so a tool failure naming the scope.
    const search = await client.callTool({ name: 'search_brain', arguments: { query: 'holiday' } });
    expect(search.isError).toBe(true);
    expect((search.content as { text: string }[])[0]!.text).toContain('brain.search');
    await client.close();
    mcpBoundToken = {
      access: provider.saved!.access_token,
      refresh: provider.saved!.refresh_token!,
      clientId,
    };
  });

  it('binds tokens to the resource they were asked for (RFC 8707)', async () => {
    const api = `${h.base}/api/pub/v1`;
    const staff = (token: string) => fetch(`${api}/staff`, { headers: { authorization: `Bearer ${token}` } });
    const ping = (token: string) =>
      fetch(`${api}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
    // The SDK asked for the MCP server: the REST API refuses its token.
    expect((await ping(mcpBoundToken.access)).status).toBe(200);
    const refused = await staff(mcpBoundToken.access);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('issued for');
    // Its refresh token cannot be turned into a token for another resource.
    const refresh = await h.postToken({
      grant_type: 'refresh_token',
      refresh_token: mcpBoundToken.refresh,
      client_id: mcpBoundToken.clientId,
      resource: api,
    });
    expect(refresh.status).toBe(400);
    expect(((await refresh.json()) as { error: string }).error).toBe('invalid_target');

    const app = await h.registerApp({
      type: 'public',
      scopes: ['staff.list', 'tasks.read'],
      redirectUris: [`http://127.0.0.1:${callbackPort}/plain`],
    });
    const tokenFor = async (resource: string | undefined) => {
      const verifier = randomBytes(32).toString('base64url');
      const url = new URL(`${h.issuer}/authorize`);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        scope: 'staff.list tasks.read',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        ...(resource ? { resource } : {}),
      }).toString();
      await page.goto(url.toString());
      if (page.url().includes('/oauth/authorize')) {
        await page.getByLabel('Test workspace').check();
        await page.getByRole('button', { name: 'Allow' }).click();
      }
      await page.waitForURL(`${app.redirectUri}?**`);
      return redeemCode(page.url(), { redirectUri: app.redirectUri, verifier, clientId: app.clientId });
    };
    // Without a resource: both the REST API and /mcp.
    const anywhere = await tokenFor(undefined);
    expect((await staff(anywhere)).status).toBe(200);
    expect((await ping(anywhere)).status).toBe(200);
    // For the REST API: /mcp refuses it, pointing at its own metadata.
    const apiOnly = await tokenFor(api);
    expect((await staff(apiOnly)).status).toBe(200);
    const wrong = await ping(apiOnly);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('resource_metadata=');
    // A resource this server does not protect is refused at authorization.
    await page.goto(
      `${h.issuer}/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        scope: 'staff.list',
        code_challenge: createHash('sha256').update('x'.repeat(43)).digest('base64url'),
        code_challenge_method: 'S256',
        resource: 'https://elsewhere.example/api',
      }).toString()}`,
    );
    await page.waitForURL(`${app.redirectUri}?**`);
    expect(new URL(page.url()).searchParams.get('error')).toBe('invalid_target');
  });

  it('accepts a client whose client_id is the URL of its metadata document, fetched once and cached', async () => {
    const clientId = `http://127.0.0.1:${callbackPort}/client.json`;
    const redirectUri = `http://127.0.0.1:${callbackPort}/cimd`;
    documents.set(
      '/client.json',
      JSON.stringify({
        client_id: clientId,
        client_name: 'Metadata Client',
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        scope: 'tasks.read staff.list',
      }),
    );
    const authorize = (verifier: string) =>
      `${h.issuer}/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri,
        scope: 'tasks.read staff.list',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString()}`;
    const verifier = randomBytes(32).toString('base64url');
    await page.goto(authorize(verifier));
    await expect(page.locator('h1').textContent()).resolves.toBe('Allow Metadata Client to act for you?');
    const notice = (await page.getByText('It registered itself').textContent())!.replace(/\s+/g, ' ');
    expect(notice).toContain(`your answer goes to 127.0.0.1:${callbackPort}`);
    await page.getByLabel('Test workspace').check();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${redirectUri}?**`);
    const token = await redeemCode(page.url(), { redirectUri, verifier, clientId });
    const list = await fetch(`${h.base}/api/pub/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    const names = ((await list.json()) as { result: { tools: { name: string }[] } }).result.tools.map(
      (t) => t.name,
    );
    expect(names.sort()).toEqual(['get_task', 'list_projects', 'list_staff']);
    // A second authorization within the cache time does not fetch the document again.
    await page.goto(authorize(randomBytes(32).toString('base64url')));
    await page.waitForURL(`${redirectUri}?**`);
    expect(fetchedDocuments.filter((u) => u === '/client.json')).toHaveLength(1);
    const app = await findOauthAppByClientId(h.t.deps.pool, clientId);
    expect(app).toMatchObject({ registration: 'metadata', verified: false, type: 'public' });
  });

  it('refuses a metadata document that names another client, is too large, or is private by default', async () => {
    const other = `http://127.0.0.1:${callbackPort}/liar.json`;
    documents.set(
      '/liar.json',
      JSON.stringify({ client_id: 'https://someone.example/c', redirect_uris: ['https://a.example/cb'] }),
    );
    documents.set(
      '/big.json',
      JSON.stringify({
        client_id: `http://127.0.0.1:${callbackPort}/big.json`,
        redirect_uris: ['https://a.example/cb'],
        pad: 'x'.repeat(10_000),
      }),
    );
    const pageFor = async (clientId: string) => {
      const res = await fetch(
        `${h.issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'https://a.example/cb' }).toString()}`,
        { redirect: 'manual' },
      );
      expect(res.status).toBe(400);
      return res.text();
    };
    expect(await pageFor(other)).toContain('names another client_id');
    expect(await pageFor(`http://127.0.0.1:${callbackPort}/big.json`)).toContain('larger than 5120 bytes');
    await expect(
      fetchClientMetadataDocument(
        `https://127.0.0.1:${callbackPort}/client.json`,
        ['tasks.read'],
        [],
        defaultMetadataFetch,
      ),
    ).rejects.toThrow(/has no public address \(private, loopback and reserved addresses are refused\)/);
    await expect(
      fetchClientMetadataDocument(
        `http://127.0.0.1:${callbackPort}/client.json`,
        ['tasks.read'],
        [],
        defaultMetadataFetch,
      ),
    ).rejects.toThrow(/must use https/);
  });

  it('refuses a registration that is not a public client or has a bad redirect', async () => {
    const post = (body: object) =>
      fetch(`${h.issuer}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const secretClient = await post({
      redirect_uris: ['https://app.example/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(secretClient.status).toBe(400);
    expect(((await secretClient.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const badRedirect = await post({ redirect_uris: ['http://evil.example/cb'] });
    expect(((await badRedirect.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    const metadata = (await (
      await fetch(`${h.base}/.well-known/oauth-authorization-server/oauth`)
    ).json()) as {
      registration_endpoint: string;
    };
    expect(metadata.registration_endpoint).toBe(`${h.issuer}/register`);
  });
});
