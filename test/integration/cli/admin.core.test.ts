import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { admin, cliArgs } from '../../helpers/cli.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { afterNotification } from '../../helpers/notifications.ts';
import { contextForCli } from '../../helpers/tenantContext.ts';

let t: TestContext;
let env: Record<string, string>;

beforeAll(async () => {
  ({ t, env } = await contextForCli());
});
afterAll(() => t.close());

type Json = Record<string, Record<string, unknown>>;
// The CLI writes through its own pool: wait until the api has heard of the change.
const authChange = <T>(change: () => Promise<T>) => afterNotification(t.deps.hub, 'auth:changed', change);

describe('operator CLI', () => {
  it('builds a workspace, member, project and keys that the API accepts', async () => {
    const ws = await admin(
      cliArgs('workspace create', { name: 'Acme', credits: '5000', currency: 'EUR', 'rate-limit': '100' }),
      env,
      { viaNpm: true },
    );
    expect(ws.code).toBe(0);
    expect(ws.stdout).toEqual({ workspace: { id: expect.stringMatching(/^ws_/), name: 'Acme' } });
    const workspaceId = (ws.stdout as Json).workspace!.id as string;

    const credits = await admin(['credits', 'add', '--workspace', workspaceId, '--amount', '250'], env);
    expect(credits.stdout).toEqual({ workspace: { id: workspaceId, balance: 5250 } });

    const member = await admin(
      cliArgs('member create', {
        workspace: workspaceId,
        email: 'Dev@Acme.test',
        password: 'hunter2hunter2',
      }),
      env,
    );
    expect(member.stdout).toEqual({ member: { id: expect.stringMatching(/^mem_/), email: 'dev@acme.test' } });
    const memberId = (member.stdout as Json).member!.id as string;

    const project = await admin(
      ['project', 'create', '--workspace', workspaceId, '--name', 'Site', '--member', memberId],
      env,
    );
    expect(project.stdout).toEqual({
      project: { id: expect.stringMatching(/^prj_/), name: 'Site' },
      key: {
        id: expect.stringMatching(/^key_/),
        secret: expect.stringMatching(/^svc_sk_test_[0-9A-Za-z]{33}$/),
      },
    });
    const projectId = (project.stdout as Json).project!.id as string;
    const testKey = (project.stdout as Json).key!.secret as string;
    const me = await t.http.get(api('/me')).set(bearer(testKey)).expect(200);
    expect(me.body.app).toEqual({ id: projectId, name: 'Site' });
    expect(me.body.key.livemode).toBe(false);

    const second = await admin(
      ['project', 'create', '--workspace', workspaceId, '--name', 'Blog', '--member', memberId],
      env,
    );
    const secondId = (second.stdout as Json).project!.id as string;
    const live = await admin(
      cliArgs('key create', {
        member: memberId,
        projects: `${projectId},${secondId}`,
        live: true,
        name: 'Server',
        operations: 'text.generate,jobs.read',
        'expires-at': '2099-01-01T00:00:00Z',
        'ip-allowlist': '127.0.0.1,::1,10.0.0.0/8',
        'monthly-spend-cap': '1000',
      }),
      env,
    );
    expect(live.stdout).toEqual({
      key: { id: expect.stringMatching(/^key_/), secret: expect.stringMatching(/^svc_sk_live_/) },
    });
    const liveKey = (live.stdout as Json).key!.secret as string;
    const liveMe = await t.http.get(api('/me')).set(bearer(liveKey)).expect(200);
    expect(liveMe.body).toMatchObject({
      app: null,
      scope: { level: 'operation', packages: [], operations: ['text.generate', 'jobs.read'] },
      key: {
        name: 'Server',
        livemode: true,
        expiresAt: '2099-01-01T00:00:00.000Z',
        monthlySpendCap: { amount: 1000, currency: 'EUR' },
      },
    });

    const pkg = await admin(
      ['key', 'create', '--member', memberId, '--projects', projectId, '--packages', 'text,images'],
      env,
    );
    const pkgKey = (pkg.stdout as Json).key!.secret as string;
    expect((await t.http.get(api('/me')).set(bearer(pkgKey))).body.scope).toEqual({
      level: 'package',
      packages: ['text', 'images'],
      operations: [],
    });

    const revoked = await authChange(() =>
      admin(['key', 'revoke', '--key', (live.stdout as Json).key!.id as string], env),
    );
    expect(revoked.stdout).toEqual({
      key: { id: (live.stdout as Json).key!.id, revokedAt: expect.any(String) },
    });
    expect((await t.http.get(api('/me')).set(bearer(liveKey)).expect(401)).body.error.code).toBe(
      'api_key_revoked',
    );

    const off = await authChange(() =>
      admin(['member', 'set-developer', '--member', memberId, '--off'], env),
    );
    expect(off.stdout).toMatchObject({
      member: { id: memberId, email: 'dev@acme.test', developerAccess: false },
    });
    expect((await t.http.get(api('/me')).set(bearer(testKey)).expect(403)).body.error.code).toBe(
      'developer_access_revoked',
    );
    await authChange(() => admin(['member', 'set-developer', '--member', memberId, '--on'], env));
    await t.http.get(api('/me')).set(bearer(testKey)).expect(200);
  });

  it('answers errors as JSON on stderr with a non-zero exit', async () => {
    const unknown = await admin(['spaceship', 'launch'], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stdout).toBeNull();
    expect(unknown.stderr).toEqual({ error: { code: 'unknown_command', message: expect.any(String) } });

    const missing = await admin(['workspace', 'create'], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toEqual({ error: { code: 'invalid_arguments', message: '--name is required' } });

    const badFlag = await admin(['workspace', 'create', '--name', 'x', '--colour', 'red'], env);
    expect((badFlag.stderr as Json).error!.code).toBe('invalid_arguments');

    const noWorkspace = await admin(['credits', 'add', '--workspace', 'ws_nope', '--amount', '5'], env);
    expect((noWorkspace.stderr as Json).error!.code).toBe('not_found');

    const ws = await admin(['workspace', 'create', '--name', 'Dup'], env);
    const wsId = (ws.stdout as Json).workspace!.id as string;
    await admin(
      ['member', 'create', '--workspace', wsId, '--email', 'a@b.c', '--password', 'longenough'],
      env,
    );
    const dup = await admin(
      ['member', 'create', '--workspace', wsId, '--email', 'a@b.c', '--password', 'longenough'],
      env,
    );
    expect((dup.stderr as Json).error!.code).toBe('conflict');

    const badScope = await admin(
      ['key', 'create', '--member', 'mem_x', '--projects', 'prj_x', '--operations', 'nope.nope'],
      env,
    );
    expect((badScope.stderr as Json).error!.code).toBe('not_found');
    const bothScopes = await admin(['set-developer'], env);
    expect((bothScopes.stderr as Json).error!.code).toBe('unknown_command');
  });
});
