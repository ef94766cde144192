import type { Principal } from '../../shared/auth/principal.ts';
import { setupTestContext, type TestContext } from './context.ts';
import { createTenant, principalFor, type Tenant } from './fixtures.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from './openaiMock.ts';

type Options = {
  /** Environment overrides for the context's config. */
  env?: Record<string, string>;
  /** The tenants' starting balance (createTenant's default otherwise). */
  credits?: number;
  /** Start the context's worker once the tenants exist. */
  worker?: boolean;
};

/** The setup most integration files start from: a test context and one tenant in it. */
export async function contextWithTenant(options: Options = {}): Promise<{ t: TestContext; tenant: Tenant }> {
  const t = await setupTestContext(options.env);
  const tenant = await createTenant(t.deps.pool, { credits: options.credits });
  if (options.worker) await t.startWorker();
  return { t, tenant };
}

/** As contextWithTenant, with the principal of the tenant's live key (for jobs created without HTTP). */
export async function contextWithLivePrincipal(
  options: Options = {},
): Promise<{ t: TestContext; tenant: Tenant; principal: Principal }> {
  const { t, tenant } = await contextWithTenant(options);
  return { t, tenant, principal: await principalFor(t.deps.pool, tenant.liveKey) };
}

/** As contextWithTenant, with a second tenant for the files that check one workspace cannot see another's. */
export async function contextWithTwoTenants(
  options: Options = {},
): Promise<{ t: TestContext; tenant: Tenant; other: Tenant }> {
  const { t, tenant } = await contextWithTenant({ ...options, worker: false });
  const other = await createTenant(t.deps.pool, { credits: options.credits });
  if (options.worker) await t.startWorker();
  return { t, tenant, other };
}

/**
 * As contextWithTenant, with the `openai` provider pointed at a fresh mock (`env` on top of that), which
 * closes with the context after its worker.
 */
export async function contextWithOpenAiMock(
  options: Options = {},
): Promise<{ t: TestContext; tenant: Tenant; mock: OpenAiMock }> {
  const mock = await startOpenAiMock();
  const env = { ...openaiEnv(mock), ...options.env };
  const { t, tenant } = await contextWithTenant({ ...options, env, worker: false });
  t.closeWith(mock);
  if (options.worker) await t.startWorker();
  return { t, tenant, mock };
}

/** A test context and the environment the operator CLI needs to reach its database. */
export async function contextForCli(): Promise<{ t: TestContext; env: Record<string, string> }> {
  const t = await setupTestContext();
  return { t, env: { DATABASE_URL: t.databaseUrl } };
}

/** As contextWithTenant, with the environment that points the operator CLI at the context's database. */
export async function contextWithTenantForCli(): Promise<{
  t: TestContext;
  tenant: Tenant;
  env: Record<string, string>;
}> {
  const { t, tenant } = await contextWithTenant();
  return { t, tenant, env: { DATABASE_URL: t.databaseUrl } };
}
