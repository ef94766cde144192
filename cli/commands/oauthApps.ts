import { loadApiDocument } from '../../api/openapi/document.ts';
import { listOauthApps, type OauthAppRow, setOauthAppVerified } from '../../shared/db/queries/oauthApps.ts';
import { findProject } from '../../shared/db/queries/projects.ts';
import { registerOauthApp } from '../../shared/oauth/registerApp.ts';
import { CliError, listFlag, requireFlag } from '../cliError.ts';
import { type CommandTable, requiredString } from '../commandTable.ts';
import { projectFlag } from '../sharedFlags.ts';

/** What operators see of an app: everything but the secret's hash. */
function toAppJson(app: OauthAppRow) {
  return {
    id: app.id,
    clientId: app.client_id,
    name: app.name,
    projectId: app.project_id,
    type: app.type,
    redirectUris: app.redirect_uris,
    scopes: app.scopes,
    verified: app.verified,
    createdAt: app.created_at,
  };
}

export const oauthAppCommands: CommandTable = {
  'oauth-app create': {
    summary: 'Registers a third-party OAuth app under a project; a server app gets a secret, printed once.',
    flags: {
      project: projectFlag,
      name: requiredString('N', 'App name shown on the consent page.'),
      'redirect-uris': requiredString(
        'U1,U2',
        'Comma-separated redirect URIs: https, http on localhost, or a reverse-domain scheme.',
      ),
      scopes: requiredString(
        's1,s2',
        'Comma-separated operation ids (GET /reference) and openid, profile, email, offline_access.',
      ),
      type: requiredString('server|public', 'server (confidential, gets a secret) or public (no secret).'),
      verified: { type: 'boolean', description: 'Marks the app verified; needed for sensitive scopes.' },
    },
    run: async (pool, v) => {
      const registered = await registerOauthApp(pool, loadApiDocument(), {
        projectId: requireFlag(v, 'project'),
        name: requireFlag(v, 'name'),
        type: requireFlag(v, 'type'),
        redirectUris: listFlag(v, 'redirect-uris') ?? [],
        scopes: listFlag(v, 'scopes') ?? [],
        verified: v.verified === true,
      });
      if ('problem' in registered) throw new CliError(registered.problem.code, registered.problem.message);
      return { app: { clientId: registered.app.clientId, clientSecret: registered.app.clientSecret } };
    },
  },
  'oauth-app verify': {
    summary:
      'Marks an app verified, so it may ask for sensitive scopes (files, brain search, workflows, video).',
    flags: {
      client: requiredString('C', "The app's client id (svc_oc_…)."),
    },
    run: async (pool, v) => {
      const app = await setOauthAppVerified(pool, requireFlag(v, 'client'));
      if (!app) throw new CliError('not_found', `no OAuth app with client id ${String(v.client)}`);
      return { app: toAppJson(app) };
    },
  },
  'oauth-app list': {
    summary: 'Lists the OAuth apps registered under a project, oldest first.',
    flags: {
      project: projectFlag,
    },
    run: async (pool, v) => {
      const project = await findProject(pool, requireFlag(v, 'project'));
      if (!project) throw new CliError('not_found', `no project ${String(v.project)}`);
      return { apps: (await listOauthApps(pool, project.id)).map(toAppJson) };
    },
  },
};
