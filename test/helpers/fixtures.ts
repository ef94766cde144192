import { legacyScryptHash } from '../../shared/auth/passwords.ts';
import type { Principal } from '../../shared/auth/principal.ts';
import { findKeyForAuth, toPrincipal } from '../../shared/db/queries/apiKeys.ts';
import { addCredits } from '../../shared/db/queries/credits.ts';
import { insertMember } from '../../shared/db/queries/members.ts';
import { insertProject } from '../../shared/db/queries/projects.ts';
import { insertTask } from '../../shared/db/queries/tasks.ts';
import { insertWorkspace } from '../../shared/db/queries/workspaces.ts';
import type { DatabasePool } from '../../shared/db/sql.ts';
import { createApiKey, type CreateKeyInput, unrestricted } from '../../shared/keys/mintKeys.ts';
import { newId, sha256 } from '../../shared/primitives/ids.ts';

export type Tenant = {
  workspaceId: string;
  memberId: string;
  projectId: string;
  testKey: string;
  liveKey: string;
  /** Mints another key in this workspace (defaults: live, app scope, this tenant's project). */
  key(overrides?: Partial<CreateKeyInput>): Promise<{ id: string; secret: string }>;
  addProject(name?: string): Promise<string>;
};

// One hash per test file: scrypt costs ~80 ms of CPU, and a file creates up to dozens of tenants.
let memberPasswordHash: string | undefined;

/** A workspace with credit, a developer member, a project, and a test and a live key. */
export async function createTenant(
  pool: DatabasePool,
  options: { credits?: number; rateLimitPerMinute?: number | null; currency?: string } = {},
): Promise<Tenant> {
  const workspace = await insertWorkspace(pool, {
    id: newId('ws'),
    name: 'Test workspace',
    currency: options.currency ?? 'USD',
    balanceMinor: options.credits ?? 100_000,
    storageQuotaBytes: null,
    rateLimitPerMinute: options.rateLimitPerMinute ?? null,
  });
  const member = await insertMember(pool, {
    id: newId('mem'),
    workspaceId: workspace.id,
    email: `dev-${newId('x').toLowerCase()}@example.com`,
    passwordHash: (memberPasswordHash ??= legacyScryptHash('correct horse battery')),
    hasDeveloperAccess: true,
  });
  const project = await insertProject(pool, { id: newId('prj'), workspaceId: workspace.id, name: 'Main' });
  const key = (overrides: Partial<CreateKeyInput> = {}) =>
    pool.transaction((tx) =>
      createApiKey(tx, {
        workspaceId: workspace.id,
        memberId: member.id,
        projectIds: [project.id],
        livemode: true,
        name: 'Key',
        ...unrestricted(),
        ...overrides,
      }),
    );
  const testKey = await key({ livemode: false });
  const liveKey = await key({ livemode: true });
  return {
    workspaceId: workspace.id,
    memberId: member.id,
    projectId: project.id,
    testKey: testKey.secret,
    liveKey: liveKey.secret,
    key,
    addProject: async (name = 'Other') =>
      (await insertProject(pool, { id: newId('prj'), workspaceId: workspace.id, name })).id,
  };
}

export { addCredits };

/** A task of the tenant's project inserted as it is (no message, staff or workflow): its id. */
export async function insertBareTask(
  pool: DatabasePool,
  tenant: Pick<Tenant, 'workspaceId' | 'projectId'>,
  title: string,
): Promise<string> {
  const task = await insertTask(pool, {
    id: newId('task'),
    workspaceId: tenant.workspaceId,
    projectId: tenant.projectId,
    title,
    assigneeStaffId: null,
    workflowId: null,
    workflowValues: null,
  });
  return task.id;
}

/** The principal the auth middleware would build for `secret`. */
export async function principalFor(pool: DatabasePool, secret: string): Promise<Principal> {
  const row = await findKeyForAuth(pool, sha256(secret));
  if (!row) throw new Error('no such key');
  return toPrincipal(row);
}
