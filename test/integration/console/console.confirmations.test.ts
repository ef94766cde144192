import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { upsertGrant } from '../../../shared/db/queries/oauthGrants.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { createWebhookEndpoint } from '../../../shared/webhooks/endpoints.ts';
import { inputValue, signedInConsoleForFile } from '../oauth/harness.ts';

// Every destructive action (revoke, roll, rotate, disable, cut off) posted without its confirmation
// page's field changes nothing and leads to that page; confirmed, it acts and the page it returns
// to says what happened.
const session = signedInConsoleForFile({ WEBHOOK_ALLOW_PRIVATE: 'true' });

const csrf = async () => inputValue((await session.client.get('/account')).text, '_csrf');
const keyState = (id: string) =>
  session.h.t.deps.pool.one(sql.type(z.object({ secret_hint: z.string(), revoked: z.boolean() }))`
    select secret_hint, revoked_at is not null as revoked from api_keys where id = ${id}
  `);
const endpointState = (id: string) =>
  session.h.t.deps.pool.one(sql.type(z.object({ secret: z.string(), enabled: z.boolean() }))`
    select secret, enabled from webhook_endpoints where id = ${id}
  `);

describe('destructive actions in the console and on the account page', () => {
  it('revoke and roll change nothing without their confirmation', async () => {
    const key = await session.h.tenant.key({ livemode: false, name: 'Guarded key' });
    const before = await keyState(key.id);
    for (const action of ['revoke', 'roll']) {
      const res = await session.client.post(`${session.base}/keys/${key.id}/${action}`, {
        _csrf: await csrf(),
        overlap_seconds: '0',
      });
      expect(res.status).toBe(303);
      expect(res.location).toBe(`${session.base}/keys/${key.id}/${action}`);
      const page = await session.client.get(res.location!);
      expect(page.text).toContain(action === 'revoke' ? 'answer 401 at once' : 'gets a new secret');
    }
    expect(await keyState(key.id)).toEqual(before);
    const revoked = await session.client.post(`${session.base}/keys/${key.id}/revoke`, {
      _csrf: await csrf(),
      confirm: 'yes',
    });
    expect(revoked.location).toBe(`${session.base}/keys?done=key-revoked`);
    expect((await session.client.get(revoked.location!)).text).toContain('The key was revoked');
    expect((await keyState(key.id)).revoked).toBe(true);
  });

  it('rotate and disable change nothing without their confirmation', async () => {
    const created = await createWebhookEndpoint(session.h.t.deps.pool, {
      projectId: session.h.tenant.projectId,
      url: 'https://hooks.example.com/guarded',
      events: ['job.failed'],
      allowPrivate: true,
      workspaceId: session.h.tenant.workspaceId,
    });
    if ('problem' in created) throw new Error(created.problem.message);
    const id = created.endpoint.id;
    const before = await endpointState(id);
    const rotate = await session.client.post(`${session.base}/webhooks/${id}/rotate`, {
      _csrf: await csrf(),
    });
    expect(rotate.location).toBe(`${session.base}/webhooks/${id}/rotate`);
    const disable = await session.client.post(`${session.base}/webhooks/${id}/enabled`, {
      _csrf: await csrf(),
      enabled: 'off',
    });
    expect(disable.location).toBe(`${session.base}/webhooks/${id}/disable`);
    expect(await endpointState(id)).toEqual(before);
    const confirmed = await session.client.post(`${session.base}/webhooks/${id}/enabled`, {
      _csrf: await csrf(),
      enabled: 'off',
      confirm: 'yes',
    });
    expect((await session.client.get(confirmed.location!)).text).toContain('The endpoint was disabled');
    expect((await endpointState(id)).enabled).toBe(false);
  });

  it('cut off changes nothing without its confirmation', async () => {
    const app = await session.h.registerApp({ scopes: ['tasks.read'] });
    const grant = await upsertGrant(session.h.t.deps.pool, {
      id: newId('grt'),
      appId: app.id,
      workspaceId: session.h.tenant.workspaceId,
      memberId: session.h.tenant.memberId,
      scopes: ['tasks.read'],
    });
    const res = await session.client.post(`/account/apps/${grant.id}/revoke`, { _csrf: await csrf() });
    expect(res.location).toBe(`/account/apps/${grant.id}/revoke`);
    const live = () =>
      session.h.t.deps.pool.oneFirst(sql.type(z.object({ live: z.boolean() }))`
        select revoked_at is null as live from oauth_grants where id = ${grant.id}
      `);
    expect(await live()).toBe(true);
    const confirmed = await session.client.post(`/account/apps/${grant.id}/revoke`, {
      _csrf: await csrf(),
      confirm: 'yes',
    });
    expect(confirmed.location).toBe('/account?done=app-cut-off');
    const account = (await session.client.get(confirmed.location!)).text;
    expect(account).toContain('The app was cut off');
    expect(account).toContain('href="/console"');
    expect(await live()).toBe(false);
  });
});
