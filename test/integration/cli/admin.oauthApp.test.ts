import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { insertBrowserSession } from '../../../shared/db/queries/browserSessions.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId, sha256 } from '../../../shared/primitives/ids.ts';
import { admin, cliArgs } from '../../helpers/cli.ts';
import type { TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenantForCli } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let env: Record<string, string>;

beforeAll(async () => ({ t, tenant, env } = await contextWithTenantForCli()));
afterAll(() => t.close());

type Json = Record<string, Record<string, string | null>>;
const create = (args: string[]) =>
  admin(['oauth-app', 'create', '--project', tenant.projectId, '--name', 'Zapier-like', ...args], env);

/** oauth-app create with these redirect URIs, scopes and type, and any further flags. */
const createApp = (redirectUris: string, scopes: string, type: 'server' | 'public', ...flags: string[]) =>
  create(['--redirect-uris', redirectUris, '--scopes', scopes, '--type', type, ...flags]);

describe('oauth-app create', () => {
  it('registers a server app with a secret shown once and stored as a hash', async () => {
    const out = await createApp(
      'https://app.example.com/cb,http://localhost:3000/cb',
      'tasks.create,tasks.read,offline_access',
      'server',
    );
    expect(out.code).toBe(0);
    const app = (out.stdout as Json).app!;
    expect(app).toEqual({
      clientId: expect.stringMatching(/^svc_oc_[0-9A-Za-z]{24}$/),
      clientSecret: expect.stringMatching(/^svc_ocs_[0-9A-Za-z]{40}$/),
    });
    const row = await t.deps.pool.one(sql.type(
      z.object({
        client_secret_hash: z.instanceof(Buffer),
        verified: z.boolean(),
        scopes: z.array(z.string()),
      }),
    )`
      select client_secret_hash, verified, scopes from oauth_apps where client_id = ${app.clientId!}
    `);
    expect(row.client_secret_hash.equals(sha256(app.clientSecret!))).toBe(true);
    expect(row).toMatchObject({ verified: false, scopes: ['tasks.create', 'tasks.read', 'offline_access'] });
  });

  it('registers a public app without a secret', async () => {
    const out = await createApp('com.example.app:/oauth', 'openid,profile,tasks.read', 'public');
    expect((out.stdout as Json).app).toEqual({
      clientId: expect.stringMatching(/^svc_oc_/),
      clientSecret: null,
    });
  });

  it('needs --verified for sensitive scopes and refuses bad input', async () => {
    const sensitive = await createApp('https://a.example/cb', 'files.upload', 'server');
    expect(sensitive.stderr).toEqual({
      error: { code: 'invalid_arguments', message: expect.stringContaining('files.upload') },
    });
    const verified = await createApp(
      'https://a.example/cb',
      'files.upload,brain.search',
      'server',
      '--verified',
    );
    expect(verified.code).toBe(0);
    for (const [args, fragment] of [
      [
        ['--redirect-uris', 'http://evil.example/cb', '--scopes', 'tasks.read', '--type', 'server'],
        'localhost',
      ],
      [
        ['--redirect-uris', 'https://a.example/cb', '--scopes', 'tasks.delete', '--type', 'server'],
        'unknown scopes',
      ],
      // The rule (and its words) is shared with the console's registration form.
      [
        ['--redirect-uris', 'https://a.example/cb', '--scopes', 'tasks.read', '--type', 'spa'],
        'must be server or public',
      ],
    ] as const) {
      const out = await create([...args]);
      expect(out.code).not.toBe(0);
      expect((out.stderr as Json).error).toEqual({
        code: 'invalid_arguments',
        message: expect.stringContaining(fragment),
      });
    }
    const missing = await admin(
      cliArgs('oauth-app create', {
        project: 'prj_nope',
        name: 'x',
        'redirect-uris': 'https://a.example/cb',
        scopes: 'tasks.read',
        type: 'server',
      }),
      env,
    );
    expect((missing.stderr as Json).error!.code).toBe('not_found');
  });
});

describe('oauth-app verify and list', () => {
  it("verifies an app by client id and lists a project's apps without secrets", async () => {
    const created = await createApp('https://v.example/cb', 'tasks.read', 'server');
    const clientId = (created.stdout as Json).app!.clientId!;
    const verified = await admin(['oauth-app', 'verify', '--client', clientId], env);
    expect(verified.code).toBe(0);
    expect((verified.stdout as { app: Record<string, unknown> }).app).toMatchObject({
      clientId,
      name: 'Zapier-like',
      projectId: tenant.projectId,
      type: 'server',
      redirectUris: ['https://v.example/cb'],
      scopes: ['tasks.read'],
      verified: true,
    });
    const listed = await admin(['oauth-app', 'list', '--project', tenant.projectId], env);
    const apps = (listed.stdout as { apps: Record<string, unknown>[] }).apps;
    expect(apps.map((a) => a.clientId)).toContain(clientId);
    expect(JSON.stringify(apps)).not.toMatch(/secret/i);
    const unknown = await admin(['oauth-app', 'verify', '--client', 'svc_oc_nope'], env);
    expect(unknown.code).not.toBe(0);
    expect((unknown.stderr as Json).error!.code).toBe('not_found');
    expect(
      ((await admin(['oauth-app', 'list', '--project', 'prj_nope'], env)).stderr as Json).error!.code,
    ).toBe('not_found');
  });
});

describe('member sessions-revoke', () => {
  it('ends every browser session of the member and says how many', async () => {
    for (let i = 0; i < 2; i++) {
      await insertBrowserSession(t.deps.pool, {
        id: newId('bss'),
        secretHash: sha256(newId('secret')),
        email: 'someone@example.com',
        memberIds: [tenant.memberId],
        ip: null,
        userAgent: null,
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      });
    }
    const out = await admin(['member', 'sessions-revoke', '--member', tenant.memberId], env);
    expect(out).toMatchObject({ code: 0, stdout: { member: { id: tenant.memberId }, revoked: 2 } });
    const again = await admin(['member', 'sessions-revoke', '--member', tenant.memberId], env);
    expect(again.stdout).toEqual({ member: { id: tenant.memberId }, revoked: 0 });
    const missing = await admin(['member', 'sessions-revoke', '--member', 'mem_nope'], env);
    expect((missing.stderr as Json).error!.code).toBe('not_found');
  });
});
