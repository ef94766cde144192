import { randomBytes } from 'node:crypto';

import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  authorize,
  codeExchange,
  type FormClient,
  type Harness,
  type RegisteredApp,
  startHarness,
} from './harness.ts';

let h: Harness;
let app: RegisteredApp;
let browser: FormClient;

beforeAll(async () => {
  h = await startHarness();
  await h.t.startWorker();
  app = await h.registerApp({ scopes: ['text.generate', 'embeddings.create'] });
  browser = await h.signIn();
});
afterAll(() => h.close());

/** An access token for the tenant's member with these scopes. */
async function tokenFor(scope: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const url = h.authorizeUrl(app, scope, verifier, { prompt: 'consent' });
  const back = await authorize(browser, url, { member: h.tenant.memberId });
  const res = await h.postToken(
    codeExchange({
      code: back.searchParams.get('code')!,
      redirectUri: app.redirectUri,
      verifier,
      clientId: app.clientId,
      clientSecret: app.clientSecret!,
    }),
  );
  return ((await res.json()) as { access_token: string }).access_token;
}

const hello = { model: 'default', max_tokens: 32, messages: [{ role: 'user' as const, content: 'Hi' }] };

describe('OAuth access tokens on the Anthropic-compatible API', () => {
  it('work as a bearer token and as x-api-key, within their scopes', async () => {
    const token = await tokenFor('text.generate');
    const client = new Anthropic({ apiKey: token, baseURL: `${h.base}/api/anthropic`, maxRetries: 0 });
    const message = await client.messages.create(hello);
    expect(message.content[0]).toMatchObject({ type: 'text' });
    const viaHeader = await fetch(`${h.base}/api/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(hello),
    });
    expect(viaHeader.status).toBe(200);
    expect(((await viaHeader.json()) as { type: string }).type).toBe('message');

    const embeddingsOnly = await tokenFor('embeddings.create');
    const narrow = new Anthropic({
      apiKey: embeddingsOnly,
      baseURL: `${h.base}/api/anthropic`,
      maxRetries: 0,
    });
    const denied = await narrow.messages.create(hello).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(denied).toBeInstanceOf(Anthropic.PermissionDeniedError);
  }, 60_000);
});
