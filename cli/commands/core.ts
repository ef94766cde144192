import { loadApiDocument } from '../../api/openapi/document.ts';
import { hashPassword } from '../../shared/auth/passwords.ts';
import {
  findApiKey,
  listKeysForOperator,
  revokeApiKey,
  setKeyTokensPerMinute,
} from '../../shared/db/queries/apiKeys.ts';
import { deleteMemberSessions } from '../../shared/db/queries/browserSessions.ts';
import { addCredits } from '../../shared/db/queries/credits.ts';
import { insertMember, setMemberDeveloperAccess } from '../../shared/db/queries/members.ts';
import { insertProject } from '../../shared/db/queries/projects.ts';
import { insertWorkspace, setWorkspaceLimits } from '../../shared/db/queries/workspaces.ts';
import { resolveKeyRequest } from '../../shared/keys/keyRequest.ts';
import { createApiKey, maxRollOverlapMs, rollApiKey, unrestricted } from '../../shared/keys/mintKeys.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { CliError, integerFlag, listFlag, requireFlag } from '../cliError.ts';
import { type CommandTable, optionalString, requiredString } from '../commandTable.ts';
import {
  existingWorkspace,
  memberFlag,
  requireMember,
  requireWorkspaceMember,
  workspaceFlag,
} from '../sharedFlags.ts';

export const coreCommands: CommandTable = {
  'workspace create': {
    summary: 'Creates a workspace with a credit balance.',
    flags: {
      name: requiredString('N', 'Workspace name.'),
      credits: optionalString('MINOR', 'Opening credit balance in minor units of the currency (default 0).'),
      currency: optionalString('USD', 'ISO 4217 currency code (default USD).'),
      'storage-quota': optionalString('BYTES', 'File storage quota in bytes (default: none).'),
      'rate-limit': optionalString(
        'PER_MIN',
        'Requests per minute for the workspace (default: RATE_LIMIT_PER_MINUTE).',
      ),
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
  'workspace set-limits': {
    summary: "Sets a workspace's requests and tokens per minute, held across every process (0 clears one).",
    flags: {
      workspace: workspaceFlag,
      'rate-limit': optionalString('PER_MIN', 'Requests per minute; 0: back to RATE_LIMIT_PER_MINUTE.'),
      'tokens-per-minute': optionalString(
        'N',
        'Tokens (input + output) per minute of live calls; 0: no token limit (the default).',
      ),
    },
    run: async (pool, v) => {
      const cleared = (n: number | undefined) => (n === 0 ? null : n);
      const rateLimitPerMinute = cleared(integerFlag(v, 'rate-limit'));
      const tokensPerMinute = cleared(integerFlag(v, 'tokens-per-minute'));
      if (rateLimitPerMinute === undefined && tokensPerMinute === undefined) {
        throw new CliError('invalid_arguments', 'pass --rate-limit, --tokens-per-minute or both');
      }
      const row = await setWorkspaceLimits(pool, requireFlag(v, 'workspace'), {
        rateLimitPerMinute,
        tokensPerMinute,
      });
      if (!row) throw new CliError('not_found', `no workspace ${String(v.workspace)}`);
      return {
        workspace: {
          id: row.id,
          rateLimitPerMinute: row.rate_limit_per_minute,
          tokensPerMinute: row.tokens_per_minute,
        },
      };
    },
  },
  'credits add': {
    summary: "Adds credits to (or, with a negative amount, takes them from) a workspace's balance.",
    flags: {
      workspace: workspaceFlag,
      amount: requiredString('MINOR', 'Amount in minor units of the workspace currency; negative to deduct.'),
    },
    run: async (pool, v) => {
      const amount = integerFlag(v, 'amount', Number.MIN_SAFE_INTEGER);
      if (amount === undefined) throw new CliError('invalid_arguments', '--amount is required');
      const row = await addCredits(pool, requireFlag(v, 'workspace'), amount);
      if (!row) throw new CliError('not_found', `no workspace ${String(v.workspace)}`);
      return { workspace: { id: row.id, balance: row.balance_minor } };
    },
  },
  'member create': {
    summary: 'Creates a member (a person) of a workspace.',
    flags: {
      workspace: workspaceFlag,
      email: requiredString('E', 'Email address (stored lowercased).'),
      password: requiredString('P', 'Password, at least 8 characters.'),
      'no-developer': {
        type: 'boolean',
        description:
          'Creates the member without developer access (their keys are refused until it is granted).',
      },
    },
    run: async (pool, v) => {
      const workspaceId = await existingWorkspace(pool, v);
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
        passwordHash: await hashPassword(password),
        hasDeveloperAccess: v['no-developer'] !== true,
      });
      return { member: { id: member.id, email: member.email } };
    },
  },
  'member set-developer': {
    summary: "Grants or revokes a member's developer access; their keys follow at once.",
    flags: {
      member: memberFlag('Member id (mem_…).', { required: true }),
      on: { type: 'boolean', description: 'Grant developer access (pass exactly one of --on and --off).' },
      off: { type: 'boolean', description: 'Revoke developer access (pass exactly one of --on and --off).' },
    },
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
  'member sessions-revoke': {
    summary:
      'Signs a member out of every browser (account and consent pages); their OAuth tokens are untouched.',
    flags: {
      member: memberFlag('Member id (mem_…).', { required: true }),
    },
    run: async (pool, v) => {
      const member = await requireMember(pool, requireFlag(v, 'member'));
      const revoked = await deleteMemberSessions(pool, member.id);
      return { member: { id: member.id }, revoked };
    },
  },
  'project create': {
    summary: 'Creates a project and its first (test) key, created by the given member.',
    flags: {
      workspace: workspaceFlag,
      name: requiredString('N', 'Project name.'),
      member: memberFlag('Member id (mem_…) of the workspace who creates the first key.', { required: true }),
    },
    run: async (pool, v) => {
      const workspaceId = requireFlag(v, 'workspace');
      const member = await requireWorkspaceMember(pool, workspaceId, requireFlag(v, 'member'));
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
    summary: 'Creates an API key for a member; its secret is printed once.',
    flags: {
      member: memberFlag('Member id (mem_…) who owns the key.', { required: true }),
      projects: requiredString(
        'P1,P2',
        "Comma-separated project ids (prj_…) of the member's workspace the key may use.",
      ),
      live: { type: 'boolean', description: 'A live key (billed); without it a test key (fixtures, free).' },
      name: optionalString('N', 'Key name (default "Live key" or "Test key").'),
      packages: optionalString(
        'a,b',
        'Limit the key to these packages (ids from GET /reference); not with --operations.',
      ),
      operations: optionalString(
        'a.b,c.d',
        'Limit the key to these operations (ids from GET /reference); not with --packages.',
      ),
      'expires-at': optionalString('ISO', 'Expiry as an ISO 8601 timestamp.'),
      'ip-allowlist': optionalString(
        'CIDR,…',
        'Comma-separated CIDR ranges the key may be used from (default: anywhere).',
      ),
      'monthly-spend-cap': optionalString(
        'MINOR',
        'Most the key may spend per calendar month (UTC), in minor units.',
      ),
      'tokens-per-minute': optionalString(
        'N',
        "Tokens (input + output) per minute of the key's live calls, besides its workspace's limit.",
      ),
    },
    run: async (pool, v) => {
      const member = await requireMember(pool, requireFlag(v, 'member'));
      const projectIds = listFlag(v, 'projects') ?? [];
      if (projectIds.length === 0) {
        throw new CliError('invalid_arguments', '--projects needs at least one project id');
      }
      const resolved = await resolveKeyRequest(pool, loadApiDocument(), {
        member,
        projectIds,
        livemode: v.live === true,
        name: v.name as string | undefined,
        packages: listFlag(v, 'packages'),
        operations: listFlag(v, 'operations'),
        expiresAt: v['expires-at'] as string | undefined,
        ipAllowlist: listFlag(v, 'ip-allowlist') ?? [],
        monthlySpendCapMinor: integerFlag(v, 'monthly-spend-cap') ?? null,
      });
      if ('problem' in resolved) throw new CliError(resolved.problem.code, resolved.problem.message);
      const tokensPerMinute = integerFlag(v, 'tokens-per-minute', 1);
      const key = await pool.transaction(async (tx) => {
        const created = await createApiKey(tx, resolved.input);
        if (tokensPerMinute !== undefined) await setKeyTokensPerMinute(tx, created.id, tokensPerMinute);
        return created;
      });
      return { key };
    },
  },
  'key list': {
    summary:
      "Lists a workspace's API keys (or one member's), newest first, with who revoked each; never their secrets.",
    flags: {
      workspace: workspaceFlag,
      member: memberFlag('Only the keys this member (mem_…) of the workspace created.', { required: false }),
    },
    run: async (pool, v) => {
      const workspaceId = await existingWorkspace(pool, v);
      const memberId = v.member as string | undefined;
      if (memberId !== undefined) await requireWorkspaceMember(pool, workspaceId, memberId);
      const rows = await listKeysForOperator(pool, { workspaceId, memberId });
      return {
        keys: rows.map((k) => ({
          id: k.id,
          name: k.name,
          memberId: k.member_id,
          projects: k.projects,
          mode: k.livemode ? 'live' : 'test',
          createdAt: k.created_at,
          expiresAt: k.expires_at,
          revokedAt: k.revoked_at,
          // A member's id (revoked in the console), 'operator' (`key revoke`), or null: live, or
          // revoked before revocations were recorded.
          revokedBy: k.revoked_by,
        })),
      };
    },
  },
  'key revoke': {
    summary: 'Revokes an API key; every api process refuses it as soon as it hears of the change.',
    flags: { key: requiredString('K', 'Key id (key_…).') },
    run: async (pool, v) => {
      // Recorded as the operator's doing: `key list` and the console say so.
      const row = await revokeApiKey(pool, requireFlag(v, 'key'), 'operator');
      if (!row) throw new CliError('not_found', `no key ${String(v.key)}`);
      return { key: { id: row.id, revokedAt: row.revoked_at } };
    },
  },
  'key roll': {
    summary: 'Gives an API key a new secret (printed once); the old one keeps working for the overlap.',
    flags: {
      key: requiredString('K', 'Key id (key_…).'),
      overlap: optionalString(
        'SECONDS',
        'How long the old secret keeps working, 0 to 86400 seconds (default 3600).',
      ),
    },
    run: async (pool, v) => {
      const key = await findApiKey(pool, requireFlag(v, 'key'));
      if (!key || key.revoked_at !== null) {
        throw new CliError('not_found', `no unrevoked key ${String(v.key)}`);
      }
      const overlapSeconds = integerFlag(v, 'overlap') ?? 3600;
      if (overlapSeconds * 1000 > maxRollOverlapMs) {
        throw new CliError('invalid_arguments', '--overlap is at most 86400 seconds (24 h)');
      }
      const rolled = await rollApiKey(pool, {
        keyId: key.id,
        workspaceId: key.workspace_id,
        livemode: key.livemode,
        overlapMs: overlapSeconds * 1000,
        now: Date.now(),
      });
      if (!rolled) throw new CliError('not_found', `no unrevoked key ${key.id}`);
      return { key: { id: rolled.id, secret: rolled.secret, previousSecretUntil: rolled.previousUntil } };
    },
  },
};
