import { insertOauthApp } from '../db/queries/oauthApps.ts';
import { findProject } from '../db/queries/projects.ts';
import type { Db } from '../db/sql.ts';
import { newId, randomBase62, sha256 } from '../primitives/ids.ts';
import { identityScopes, redirectUriProblem } from './registration.ts';

/** The operation catalogue scopes are checked against (the OpenAPI document's). */
export type OauthScopeCatalogue = {
  scopes: readonly string[];
  operations: readonly { scope: string | undefined; sensitive: boolean }[];
};

export type AppRegistration = {
  projectId: string;
  name: string;
  type: string;
  redirectUris: string[];
  scopes: string[];
  verified: boolean;
  /** The console's session workspace: the project must be in it. */
  workspaceId?: string;
};

export type RegistrationProblem = { code: 'not_found' | 'invalid_arguments'; message: string };

/**
 * Registers a third-party OAuth app (the CLI's `oauth-app create` and the console): redirect URIs by
 * redirectUriProblem, known scopes only, sensitive scopes only for a verified app. A server app gets
 * a client secret, returned here once.
 */
export async function registerOauthApp(
  db: Db,
  catalogue: OauthScopeCatalogue,
  r: AppRegistration,
): Promise<
  { app: { id: string; clientId: string; clientSecret: string | null } } | { problem: RegistrationProblem }
> {
  const invalid = (message: string) => ({ problem: { code: 'invalid_arguments' as const, message } });
  const project = await findProject(db, r.projectId);
  if (!project || (r.workspaceId !== undefined && project.workspace_id !== r.workspaceId)) {
    return { problem: { code: 'not_found', message: `no project ${r.projectId}` } };
  }
  if (r.type !== 'server' && r.type !== 'public') return invalid('the type must be server or public');
  const name = r.name.trim();
  if (name.length < 1 || name.length > 200) return invalid('the name needs 1 to 200 characters');
  if (r.redirectUris.length === 0) return invalid('at least one redirect URI is needed');
  for (const uri of r.redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) return invalid(`redirect URI ${uri} ${problem}`);
  }
  const scopes = [...new Set(r.scopes)];
  if (scopes.length === 0) return invalid('at least one scope is needed');
  const known = new Set<string>([...catalogue.scopes, ...identityScopes]);
  const unknown = scopes.filter((s) => !known.has(s));
  if (unknown.length > 0) return invalid(`unknown scopes: ${unknown.join(', ')}; see GET /reference`);
  // Sensitive scopes (files, brain search, workflows, video) need a verified app (spec).
  const sensitive = catalogue.operations
    .filter((o) => o.sensitive && o.scope && scopes.includes(o.scope))
    .map((o) => o.scope);
  if (sensitive.length > 0 && !r.verified) {
    return invalid(`sensitive scopes need a verified app: ${sensitive.join(', ')}`);
  }
  const clientSecret = r.type === 'server' ? `svc_ocs_${randomBase62(40)}` : null;
  const app = await insertOauthApp(db, {
    id: newId('app'),
    projectId: project.id,
    workspaceId: project.workspace_id,
    name,
    clientId: `svc_oc_${randomBase62(24)}`,
    clientSecretHash: clientSecret === null ? null : sha256(clientSecret),
    type: r.type,
    redirectUris: r.redirectUris,
    scopes,
    verified: r.verified,
  });
  return { app: { id: app.id, clientId: app.client_id, clientSecret } };
}
