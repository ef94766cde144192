import { isValidCidr } from '../../api/auth/ipAllowlist.ts';
import { loadApiDocument } from '../../api/openapi/document.ts';
import { revokeApiKey } from '../../shared/db/queries/apiKeys.ts';
import { addCredits } from '../../shared/db/queries/credits.ts';
import { findMember, insertMember, setMemberDeveloperAccess } from '../../shared/db/queries/members.ts';
import { findProjects, insertProject } from '../../shared/db/queries/projects.ts';
import { insertWorkspace, workspaceExists } from '../../shared/db/queries/workspaces.ts';
import { hashPassword, newId } from '../../shared/ids.ts';
import { createApiKey, unrestricted } from '../../shared/keys.ts';
import { CliError, integerFlag, listFlag, requireFlag } from '../cliError.ts';
import type { CommandTable } from '../commandTable.ts';

export const coreCommands: CommandTable = {
  'workspace create': {
    flags: {
      name: 'string',
      credits: 'string',
      currency: 'string',
      'storage-quota': 'string',
      'rate-limit': 'string',
    },
    run: async (pool, v) => {
      const currency = (v.currency as string | undefined) ?? 'USD';
      if (!/^[A-Z]{3}$/.test(currency)) {
        throw new CliError('invalid_arguments', '--currency must be an ISO 4217 code such as USD');
      }
      const workspace = await insertWorkspace(pool, {
        id: newId('ws'),
        name: requireFlag(v, 'name'),
        currency,
        balanceMinor: integerFlag(v, 'credits') ?? 0,
        storageQuotaBytes: integerFlag(v, 'storage-quota') ?? null,
        rateLimitPerMinute: integerFlag(v, 'rate-limit', 1) ?? null,
      });
      return { workspace: { id: workspace.id, name: workspace.name } };
    },
  },
  'credits add': {
    flags: { workspace: 'string', amount: 'string' },
    run: async (pool, v) => {
      const amount = integerFlag(v, 'amount', Number.MIN_SAFE_INTEGER);
      if (amount === undefined) throw new CliError('invalid_arguments', '--amount is required');
      const row = await addCredits(pool, requireFlag(v, 'workspace'), amount);
      if (!row) throw new CliError('not_found', `no workspace ${String(v.workspace)}`);
      return { workspace: { id: row.id, balance: row.balance_minor } };
    },
  },
  'member create': {
    flags: { workspace: 'string', email: 'string', password: 'string', 'no-developer': 'boolean' },
    run: async (pool, v) => {
      const workspaceId = requireFlag(v, 'workspace');
      if (!(await workspaceExists(pool, workspaceId))) {
        throw new CliError('not_found', `no workspace ${workspaceId}`);
      }
      const email = requireFlag(v, 'email').toLowerCase();
      if (!/^[^@\s]+@[^@\s]+$/.test(email)) {
        throw new CliError('invalid_arguments', '--email must be an email address');
      }
      const password = requireFlag(v, 'password');
      if (password.length < 8) {
        throw new CliError('invalid_arguments', '--password needs at least 8 characters');
      }
      const member = await insertMember(pool, {
        id: newId('mem'),
        workspaceId,
        email,
        passwordHash: hashPassword(password),
        hasDeveloperAccess: v['no-developer'] !== true,
      });
      return { member: { id: member.id, email: member.email } };
    },
  },
  'member set-developer': {
    flags: { member: 'string', on: 'boolean', off: 'boolean' },
    run: async (pool, v) => {
      if ((v.on === true) === (v.off === true)) {
        throw new CliError('invalid_arguments', 'pass exactly one of --on or --off');
      }
      const member = await setMemberDeveloperAccess(pool, requireFlag(v, 'member'), v.on === true);
      if (!member) throw new CliError('not_found', `no member ${String(v.member)}`);
      return {
        member: {
          id: member.id,
          email: member.email,
          workspaceId: member.workspace_id,
          developerAccess: member.has_developer_access,
        },
      };
    },
  },
  'project create': {
    flags: { workspace: 'string', name: 'string', member: 'string' },
    run: async (pool, v) => {
      const workspaceId = requireFlag(v, 'workspace');
      const member = await findMember(pool, requireFlag(v, 'member'));
      if (!member || member.workspace_id !== workspaceId) {
        throw new CliError('not_found', `no member ${String(v.member)} in workspace ${workspaceId}`);
      }
      return pool.transaction(async (tx) => {
        const project = await insertProject(tx, {
          id: newId('prj'),
          workspaceId,
          name: requireFlag(v, 'name'),
        });
        const key = await createApiKey(tx, {
          workspaceId,
          memberId: member.id,
          projectIds: [project.id],
          livemode: false,
          name: `${project.name} test key`,
          ...unrestricted(),
        });
        return { project: { id: project.id, name: project.name }, key };
      });
    },
  },
  'key create': {
    flags: {
      member: 'string',
      projects: 'string',
      live: 'boolean',
      name: 'string',
      packages: 'string',
      operations: 'string',
      'expires-at': 'string',
      'ip-allowlist': 'string',
      'monthly-spend-cap': 'string',
    },
    run: async (pool, v) => {
      const member = await findMember(pool, requireFlag(v, 'member'));
      if (!member) throw new CliError('not_found', `no member ${String(v.member)}`);
      const projectIds = listFlag(v, 'projects') ?? [];
      if (projectIds.length === 0) {
        throw new CliError('invalid_arguments', '--projects needs at least one project id');
      }
      const projects = await findProjects(pool, projectIds);
      const missing = projectIds.filter(
        (id) => !projects.some((p) => p.id === id && p.workspace_id === member.workspace_id),
      );
      if (missing.length > 0) {
        throw new CliError('not_found', `no project ${missing.join(', ')} in the member's workspace`);
      }
      const packages = listFlag(v, 'packages');
      const operations = listFlag(v, 'operations');
      if (packages && operations) {
        throw new CliError('invalid_arguments', 'pass --packages or --operations, not both');
      }
      const doc = loadApiDocument();
      const unknownPackages = (packages ?? []).filter((p) => !doc.packages.some((d) => d.id === p));
      const unknownOperations = (operations ?? []).filter((o) => !doc.scopes.includes(o));
      if (
        unknownPackages.length > 0 ||
        unknownOperations.length > 0 ||
        packages?.length === 0 ||
        operations?.length === 0
      ) {
        throw new CliError(
          'invalid_arguments',
          `unknown or empty scope: ${[...unknownPackages, ...unknownOperations].join(', ') || 'empty list'}; see GET /reference`,
        );
      }
      const expiresAt = v['expires-at'] as string | undefined;
      if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt))) {
        throw new CliError('invalid_arguments', '--expires-at must be an ISO 8601 timestamp');
      }
      const ipAllowlist = listFlag(v, 'ip-allowlist') ?? [];
      const badCidrs = ipAllowlist.filter((c) => !isValidCidr(c));
      if (badCidrs.length > 0) throw new CliError('invalid_arguments', `not a CIDR: ${badCidrs.join(', ')}`);
      const livemode = v.live === true;
      const key = await pool.transaction((tx) =>
        createApiKey(tx, {
          workspaceId: member.workspace_id,
          memberId: member.id,
          projectIds,
          livemode,
          name: (v.name as string | undefined) ?? `${livemode ? 'Live' : 'Test'} key`,
          scopeLevel: packages ? 'package' : operations ? 'operation' : 'app',
          packages: packages ?? [],
          operations: operations ?? [],
          expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString(),
          ipAllowlist,
          monthlySpendCapMinor: integerFlag(v, 'monthly-spend-cap') ?? null,
        }),
      );
      return { key };
    },
  },
  'key revoke': {
    flags: { key: 'string' },
    run: async (pool, v) => {
      const row = await revokeApiKey(pool, requireFlag(v, 'key'));
      if (!row) throw new CliError('not_found', `no key ${String(v.key)}`);
      return { key: { id: row.id, revokedAt: row.revoked_at } };
    },
  },
};
