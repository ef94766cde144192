import { findProjects } from '../db/queries/projects.ts';
import type { Db } from '../db/sql.ts';
import { isValidCidr } from './ipAllowlist.ts';
import type { CreateKeyInput } from './mintKeys.ts';

/** What a person or operator asks for; the CLI's flags and the console's form both end up here. */
export type KeyRequest = {
  member: { id: string; workspace_id: string };
  projectIds: string[];
  livemode: boolean;
  name: string | undefined;
  packages: string[] | undefined;
  operations: string[] | undefined;
  expiresAt: string | undefined;
  ipAllowlist: string[];
  monthlySpendCapMinor: number | null;
};

/** The operation catalogue a scope is checked against (the OpenAPI document's). */
export type ScopeCatalogue = { packages: readonly { id: string }[]; scopes: readonly string[] };

/** The part of a key request a problem is about, so a form can show it beside that field. */
export type KeyRequestField = 'projects' | 'scope' | 'expiresAt' | 'ipAllowlist';

export type KeyRequestProblem = {
  code: 'not_found' | 'invalid_arguments';
  message: string;
  field: KeyRequestField;
};

/**
 * The rules a new key must meet, in one place for every door (CLI, console): projects of the member's
 * workspace, a known and non-empty scope at one level, a parseable expiry, valid CIDRs.
 */
export async function resolveKeyRequest(
  db: Db,
  catalogue: ScopeCatalogue,
  r: KeyRequest,
): Promise<{ input: CreateKeyInput } | { problem: KeyRequestProblem }> {
  const invalid = (field: KeyRequestField, message: string) => ({
    problem: { code: 'invalid_arguments' as const, message, field },
  });
  if (r.projectIds.length === 0) return invalid('projects', 'a key needs at least one project');
  const projects = await findProjects(db, r.projectIds);
  const missing = r.projectIds.filter(
    (id) => !projects.some((p) => p.id === id && p.workspace_id === r.member.workspace_id),
  );
  if (missing.length > 0) {
    return {
      problem: {
        code: 'not_found',
        message: `no project ${missing.join(', ')} in the member's workspace`,
        field: 'projects',
      },
    };
  }
  if (r.packages && r.operations) {
    return invalid('scope', 'limit the key to packages or to operations, not both');
  }
  const unknownPackages = (r.packages ?? []).filter((p) => !catalogue.packages.some((d) => d.id === p));
  const unknownOperations = (r.operations ?? []).filter((o) => !catalogue.scopes.includes(o));
  if (
    unknownPackages.length > 0 ||
    unknownOperations.length > 0 ||
    r.packages?.length === 0 ||
    r.operations?.length === 0
  ) {
    return invalid(
      'scope',
      `unknown or empty scope: ${[...unknownPackages, ...unknownOperations].join(', ') || 'empty list'}; see GET /reference`,
    );
  }
  if (r.expiresAt !== undefined && Number.isNaN(Date.parse(r.expiresAt))) {
    return invalid('expiresAt', 'the expiry must be an ISO 8601 timestamp');
  }
  const badCidrs = r.ipAllowlist.filter((c) => !isValidCidr(c));
  if (badCidrs.length > 0) return invalid('ipAllowlist', `not a CIDR: ${badCidrs.join(', ')}`);
  return {
    input: {
      workspaceId: r.member.workspace_id,
      memberId: r.member.id,
      projectIds: r.projectIds,
      livemode: r.livemode,
      name: r.name ?? `${r.livemode ? 'Live' : 'Test'} key`,
      scopeLevel: r.packages ? 'package' : r.operations ? 'operation' : 'app',
      packages: r.packages ?? [],
      operations: r.operations ?? [],
      expiresAt: r.expiresAt === undefined ? null : new Date(r.expiresAt).toISOString(),
      ipAllowlist: r.ipAllowlist,
      monthlySpendCapMinor: r.monthlySpendCapMinor,
    },
  };
}
