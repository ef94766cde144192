import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { CliError } from '../../../cli/cliError.ts';
import { insertMember } from '../../../shared/db/queries/members.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { admin } from '../../helpers/cli.ts';
import type { TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenantForCli } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let env: Record<string, string>;

type ListedKey = {
  id: string;
  name: string;
  memberId: string;
  projects: { id: string; name: string }[];
  mode: 'test' | 'live';
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
};

beforeAll(async () => ({ t, tenant, env } = await contextWithTenantForCli()));
afterAll(() => t.close());

const run = async (values: Record<string, string>) => {
  try {
    return await commands['key list']!.run(t.deps.pool, values);
  } catch (error) {
    if (error instanceof CliError) return error.code;
    throw error;
  }
};

describe('admin key list', () => {
  it("prints a workspace's keys newest first, or one member's, with who revoked each and no secret", async () => {
    const colleague = await insertMember(t.deps.pool, {
      id: newId('mem'),
      workspaceId: tenant.workspaceId,
      email: 'lister@example.com',
      passwordHash: 'x',
      hasDeveloperAccess: true,
    });
    const second = await tenant.addProject('Second');
    const theirs = await tenant.key({
      memberId: colleague.id,
      name: 'Colleague key',
      projectIds: [tenant.projectId, second],
      expiresAt: '2099-01-01T00:00:00.000Z',
    });
    await admin(['key', 'revoke', '--key', theirs.id], env);
    await createTenant(t.deps.pool); // another workspace's keys must not show

    const all = await admin(['key', 'list', '--workspace', tenant.workspaceId], env);
    expect(all.code).toBe(0);
    const keys = (all.stdout as { keys: ListedKey[] }).keys;
    // The tenant's test and live keys, then the colleague's, newest first.
    expect(keys).toHaveLength(3);
    expect(keys[0]).toEqual({
      id: theirs.id,
      name: 'Colleague key',
      memberId: colleague.id,
      projects: [
        { id: tenant.projectId, name: 'Main' },
        { id: second, name: 'Second' },
      ],
      mode: 'live',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      expiresAt: '2099-01-01T00:00:00.000Z',
      revokedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      revokedBy: 'operator',
    });
    expect(keys.slice(1).map((k) => [k.mode, k.memberId, k.revokedAt, k.revokedBy])).toEqual([
      ['live', tenant.memberId, null, null],
      ['test', tenant.memberId, null, null],
    ]);
    expect(JSON.stringify(all.stdout)).not.toMatch(/svc_sk_|secret|hash|hint/i);

    const mine = (await run({ workspace: tenant.workspaceId, member: colleague.id })) as {
      keys: ListedKey[];
    };
    expect(mine.keys.map((k) => k.id)).toEqual([theirs.id]);
  });

  it('refuses an unknown workspace, a member of another workspace, and a missing --workspace', async () => {
    const other = await createTenant(t.deps.pool);
    expect(await run({ workspace: 'ws_nope' })).toBe('not_found');
    expect(await run({ workspace: tenant.workspaceId, member: other.memberId })).toBe('not_found');
    const missing = await admin(['key', 'list'], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toEqual({
      error: { code: 'invalid_arguments', message: '--workspace is required' },
    });
  });
});
