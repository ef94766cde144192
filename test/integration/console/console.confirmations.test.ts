import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { upsertGrant } from '../../../shared/db/queries/oauthGrants.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { createWebhookEndpoint } from '../../../shared/webhooks/endpoints.ts';
import { type FormClient, type Harness, inputValue, signedInConsole } from '../oauth/harness.ts';

// Every destructive action (revoke, roll, rotate, disable, cut off) posted without its confirmation
// page's field changes nothing and leads to that page; confirmed, it acts and the page it returns
// to says what happened.
let h: Harness;
let client: FormClient;
let base: string;

const csrf = async () => inputValue((await client.get('/account')).text, '_csrf');
const keyState = (id: string) =>
  h.t.deps.pool.one(sql.type(z.object({ secret_hint: z.string(), revoked: z.boolean() }))`
    select secret_hint, revoked_at is not null as revoked from api_keys where id = ${id}
  `);
const endpointState = (id: string) =>
  h.t.deps.pool.one(sql.type(z.object({ secret: z.string(), enabled: z.boolean() }))`
    select secret, enabled from webhook_endpoints where id = ${id}
  `);

beforeAll(async () => {
  ({ h, client, base } = await signedInConsole({ WEBHOOK_ALLOW_PRIVATE: 'true' }));
});
afterAll(() => h.close());

describe('destructive actions in the console and on the account page', () => {
  it('revoke and roll change nothing without their confirmation', async () => {
    const key = await h.tenant.key({ livemode: false, name: 'Guarded key' });
    const before = await keyState(key.id);
    for (const action of ['revoke', 'roll']) {
      const res = await client.post(`${base}/keys/${key.id}/${action}`, {
        _csrf: await csrf(),
        overlap_seconds: '0',
      });
      expect(res.status).toBe(303);
      expect(res.location).toBe(`${base}/keys/${key.id}/${action}`);
      const page = await client.get(res.location!);
      expect(page.text).toContain(action === 'revoke' ? 'answer 401 at once' : 'gets a new secret');
    }
    expect(await keyState(key.id)).toEqual(before);
    const revoked = await client.post(`${base}/keys/${key.id}/revoke`, {
      _csrf: await csrf(),
      confirm: 'yes',
    });
    expect(revoked.location).toBe(`${base}/keys?done=key-revoked`);
    expect((await client.get(revoked.location!)).text).toContain('The key was revoked');
    expect((await keyState(key.id)).revoked).toBe(true);
  });

  it('rotate and disable change nothing without their confirmation', async () => {
    const created = await createWebhookEndpoint(h.t.deps.pool, {
      projectId: h.tenant.projectId,
      url: 'https://hooks.example.com/guarded',
      events: ['job.failed'],
      allowPrivate: true,
      workspaceId: h.tenant.workspaceId,
    });
    if ('problem' in created) throw new Error(created.problem.message);
    const id = created.endpoint.id;
    const before = await endpointState(id);
    const rotate = await client.post(`${base}/webhooks/${id}/rotate`, { _csrf: await csrf() });
    expect(rotate.location).toBe(`${base}/webhooks/${id}/rotate`);
    const disable = await client.post(`${base}/webhooks/${id}/enabled`, {
      _csrf: await csrf(),
      enabled: 'off',
    });
    expect(disable.location).toBe(`${base}/webhooks/${id}/disable`);
    expect(await endpointState(id)).toEqual(before);
    const confirmed = await client.post(`${base}/webhooks/${id}/enabled`, {
      _csrf: await csrf(),
      enabled: 'off',
      confirm: 'yes',
    });
    expect((await client.get(confirmed.location!)).text).toContain('The endpoint was disabled');
    expect((await endpointState(id)).enabled).toBe(false);
  });

  it('cut off changes nothing without its confirmation', async () => {
    const app = await h.registerApp({ scopes: ['tasks.read'] });
    const grant = await upsertGrant(h.t.deps.pool, {
      id: newId('grt'),
      appId: app.id,
      workspaceId: h.tenant.workspaceId,
      memberId: h.tenant.memberId,
      scopes: ['tasks.read'],
    });
    const res = await client.post(`/account/apps/${grant.id}/revoke`, { _csrf: await csrf() });
    expect(res.location).toBe(`/account/apps/${grant.id}/revoke`);
    const live = () =>
      h.t.deps.pool.oneFirst(sql.type(z.object({ live: z.boolean() }))`
        select revoked_at is null as live from oauth_grants where id = ${grant.id}
      `);
    expect(await live()).toBe(true);
    const confirmed = await client.post(`/account/apps/${grant.id}/revoke`, {
      _csrf: await csrf(),
      confirm: 'yes',
    });
    expect(confirmed.location).toBe('/account?done=app-cut-off');
    const account = (await client.get(confirmed.location!)).text;
    expect(account).toContain('The app was cut off');
    expect(account).toContain('href="/console"');
    expect(await live()).toBe(false);
  });
});
