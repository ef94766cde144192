import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { enqueue } from '../../../shared/queue/enqueue.ts';
import { maintenancePrune } from '../../../worker/tasks/maintenance__prune.ts';
import { runDueJobs, workerContextFor } from '../../helpers/workerContext.ts';
import { FormClient, inputValue, signedInConsoleForFile, signInWith } from '../oauth/harness.ts';

// Every console form that creates something answers 303; its secret is shown once by a reveal page,
// and loading that page again (a reload) says "already shown" and creates nothing.
const session = signedInConsoleForFile({ WEBHOOK_ALLOW_PRIVATE: 'true' });

const count = (table: 'api_keys' | 'webhook_endpoints' | 'oauth_apps') =>
  session.h.t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from ${sql.identifier([table])} where workspace_id = ${session.h.tenant.workspaceId}
  `);
const csrf = async (path: string) => inputValue((await session.client.get(path)).text, '_csrf');

/** Posts a creating form, follows its redirect, then loads the page again as a reload would. */
async function createThenReload(path: string, fields: Record<string, string>) {
  const posted = await session.client.post(path, { _csrf: await csrf(`${session.base}/keys`), ...fields });
  expect(posted.status).toBe(303);
  expect(posted.location).toMatch(new RegExp(`^${session.base}/reveal/rvl_`));
  const shown = await session.client.get(posted.location!);
  const reloaded = await session.client.get(posted.location!);
  return { shown, reloaded };
}

/**
 * createThenReload, checked: the reveal shows the `secret`, the reload is refused (410), and `table`
 * holds one row more.
 */
async function expectCreatedOnce(
  table: 'api_keys' | 'webhook_endpoints' | 'oauth_apps',
  path: string,
  fields: Record<string, string>,
  secret: RegExp,
) {
  const before = await count(table);
  const { shown, reloaded } = await createThenReload(path, fields);
  expect(shown.text).toMatch(secret);
  expect(reloaded.status).toBe(410);
  expect(await count(table)).toBe(before + 1);
  return { shown, reloaded };
}

/** The key form's fields for a test-mode, app-wide key of the tenant's project. */
const testKeyFields = (name: string) => ({
  name,
  projects: session.h.tenant.projectId,
  mode: 'test',
  scope_level: 'app',
});

describe('post/redirect/get in the console', () => {
  it('creates a key once: the secret is shown once, a reload says so and creates nothing', async () => {
    const { shown, reloaded } = await expectCreatedOnce(
      'api_keys',
      `${session.base}/keys`,
      testKeyFields('Reload test'),
      /id="secret"[^>]* value="svc_sk_test_/,
    );
    expect(shown.status).toBe(200);
    expect(reloaded.text).toContain('Already shown');
    expect(reloaded.text).not.toMatch(/svc_sk_/);
  });

  it('adds a webhook endpoint once', async () => {
    await expectCreatedOnce(
      'webhook_endpoints',
      `${session.base}/webhooks`,
      { url: 'https://hooks.example.com/in', project: session.h.tenant.projectId, events: 'job.failed' },
      /value="whsec_/,
    );
  });

  it('registers an OAuth app once', async () => {
    await expectCreatedOnce(
      'oauth_apps',
      `${session.base}/apps`,
      {
        name: 'Reload app',
        project: session.h.tenant.projectId,
        type: 'server',
        redirect_uris: 'https://app.example/cb',
        scopes: 'tasks.read',
      },
      /value="svc_ocs_/,
    );
  });

  it('shows a reveal only to the browser that posted the form', async () => {
    const posted = await session.client.post(`${session.base}/keys`, {
      _csrf: await csrf(`${session.base}/keys`),
      ...testKeyFields('Other browser'),
    });
    const other = new FormClient(session.h.base);
    await signInWith(other, session.h.email);
    const elsewhere = await other.get(posted.location!);
    expect(elsewhere.status).toBe(410);
    expect(elsewhere.text).not.toMatch(/svc_sk_/);
  });

  it('leaves no sealed secret behind once a reveal expired, shown or never opened', async () => {
    const post = async () =>
      session.client.post(`${session.base}/keys`, {
        _csrf: await csrf(`${session.base}/keys`),
        ...testKeyFields('Expiring reveal'),
      });
    const [shown, unopened] = [await post(), await post()];
    expect((await session.client.get(shown.location!)).status).toBe(200);
    const ids = [shown, unopened].map((p) => p.location!.split('/').at(-1)!);
    const reveals = () =>
      session.h.t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from secret_reveals where id = any(${sql.array(ids, 'text')})
      `);
    expect(await reveals()).toBe(2);
    await session.h.t.deps.pool.query(sql.typeAlias('void')`
      update secret_reveals set expires_at = now() - interval '1 second'
      where id = any(${sql.array(ids, 'text')})
    `);
    await session.h.t.deps.pool.transaction((tx) => enqueue(tx, 'maintenance__prune', {}));
    await runDueJobs(session.h.t, { maintenance__prune: maintenancePrune(workerContextFor(session.h.t)) });
    expect(await reveals()).toBe(0);
  });
});
