import { z } from 'zod';

import { hashPassword } from '../shared/auth/passwords.ts';
import { insertMember } from '../shared/db/queries/members.ts';
import { insertProject } from '../shared/db/queries/projects.ts';
import { insertWorkspace } from '../shared/db/queries/workspaces.ts';
import { type DatabasePool, sql } from '../shared/db/sql.ts';
import { createApiKey, unrestricted } from '../shared/keys/mintKeys.ts';
import { newId, randomBase62 } from '../shared/primitives/ids.ts';

export type DemoCredentials = {
  workspaceId: string;
  projectId: string;
  email: string;
  password: string;
  testKey: string;
  liveKey: string;
};

const emptyRow = z.object({});

/**
 * On the very first start (no workspace at all) creates a demo workspace with credit, a member, a
 * project and a test and a live key, returning the secrets to print once; later starts return null.
 */
export async function ensureDemoWorkspace(pool: DatabasePool): Promise<DemoCredentials | null> {
  return pool.transaction(async (tx) => {
    // Serializes concurrent first starts: only one of them creates the demo.
    await tx.query(sql.typeAlias('void')`lock table workspaces in share row exclusive mode`);
    const any = await tx.exists(sql.type(emptyRow)`select from workspaces`);
    if (any) return null;
    const workspace = await insertWorkspace(tx, {
      id: newId('ws'),
      name: 'Demo workspace',
      currency: 'USD',
      balanceMinor: 10_000,
      storageQuotaBytes: null,
      rateLimitPerMinute: null,
    });
    const password = randomBase62(16);
    const member = await insertMember(tx, {
      id: newId('mem'),
      workspaceId: workspace.id,
      email: 'demo@example.com',
      passwordHash: await hashPassword(password),
      hasDeveloperAccess: true,
    });
    const project = await insertProject(tx, {
      id: newId('prj'),
      workspaceId: workspace.id,
      name: 'Demo project',
    });
    const base = {
      workspaceId: workspace.id,
      memberId: member.id,
      projectIds: [project.id],
      ...unrestricted(),
    };
    const test = await createApiKey(tx, { ...base, livemode: false, name: 'Demo test key' });
    const live = await createApiKey(tx, { ...base, livemode: true, name: 'Demo live key' });
    return {
      workspaceId: workspace.id,
      projectId: project.id,
      email: member.email,
      password,
      testKey: test.secret,
      liveKey: live.secret,
    };
  });
}
