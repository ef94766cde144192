import { z } from 'zod';

import { columnsOf, type Db, isoTimestamp, sql } from '../sql.ts';
import { afterPosition, cursorAt, cursorAtText, type ListPage, newestFirst } from './listPage.ts';

export type NewOauthApp = {
  id: string;
  /** Null for a self-registered app (RFC 7591): it belongs to no project until a person consents. */
  projectId: string | null;
  workspaceId: string | null;
  name: string;
  clientId: string;
  clientSecretHash: Buffer | null;
  type: 'server' | 'public';
  redirectUris: string[];
  scopes: string[];
  verified: boolean;
  registration?: 'operator' | 'dynamic' | 'metadata';
};

const insertedAppRow = z.object({ id: z.string(), client_id: z.string() });

export function insertOauthApp(db: Db, app: NewOauthApp) {
  return db.one(sql.type(insertedAppRow)`
    insert into oauth_apps (id, project_id, workspace_id, name, client_id, client_secret_hash, type, redirect_uris,
                            scopes, verified, registration)
    values (${app.id}, ${app.projectId}, ${app.workspaceId}, ${app.name}, ${app.clientId},
            ${app.clientSecretHash === null ? null : sql.binary(app.clientSecretHash)}, ${app.type},
            ${sql.array(app.redirectUris, 'text')}, ${sql.array(app.scopes, 'text')}, ${app.verified},
            ${app.registration ?? 'operator'})
    returning id, client_id
  `);
}

const appRow = z.object({
  id: z.string(),
  project_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  name: z.string(),
  client_id: z.string(),
  client_secret_hash: z.instanceof(Buffer).nullable(),
  type: z.enum(['server', 'public']),
  redirect_uris: z.array(z.string()),
  scopes: z.array(z.string()),
  verified: z.boolean(),
  registration: z.enum(['operator', 'dynamic', 'metadata']),
  created_at: isoTimestamp,
});
export type OauthAppRow = z.infer<typeof appRow>;

const appColumns = columnsOf(appRow);

export function findOauthAppByClientId(db: Db, clientId: string) {
  return db.maybeOne(sql.type(appRow)`select ${appColumns} from oauth_apps where client_id = ${clientId}`);
}

export function setOauthAppVerified(db: Db, clientId: string) {
  return db.maybeOne(sql.type(appRow)`
    update oauth_apps set verified = true where client_id = ${clientId} returning ${appColumns}
  `);
}

export function listOauthApps(db: Db, projectId: string) {
  return db.any(sql.type(appRow)`
    select ${appColumns} from oauth_apps where project_id = ${projectId} order by created_at, id
  `);
}

/** A metadata-document app (client_id = its URL) as last fetched: inserted, or its document's changes kept. */
export function upsertMetadataApp(
  db: Db,
  app: { id: string; clientId: string; name: string; redirectUris: string[]; scopes: string[] },
) {
  return db.one(sql.type(appRow)`
    insert into oauth_apps (id, project_id, workspace_id, name, client_id, client_secret_hash, type, redirect_uris,
                            scopes, verified, registration)
    values (${app.id}, null, null, ${app.name}, ${app.clientId}, null, 'public',
            ${sql.array(app.redirectUris, 'text')}, ${sql.array(app.scopes, 'text')}, false, 'metadata')
    on conflict (client_id) do update
      set name = excluded.name, redirect_uris = excluded.redirect_uris, scopes = excluded.scopes
      where oauth_apps.registration = 'metadata'
    returning ${appColumns}
  `);
}

const listedAppRow = appRow
  .omit({ client_secret_hash: true })
  .extend({ project_name: z.string(), cursor_at: cursorAtText });

/** A workspace's OAuth apps with their project, newest first, a page after (created_at, id). */
export function listWorkspaceOauthApps(db: Db, workspaceId: string, page: ListPage) {
  return db.any(sql.type(listedAppRow)`
    select a.id, a.project_id, a.workspace_id, a.name, a.client_id, a.type, a.redirect_uris, a.scopes, a.verified,
           a.registration,
           a.created_at, p.name as project_name,
           ${cursorAt('a')}
    from oauth_apps a join projects p on p.id = a.project_id
    where a.workspace_id = ${workspaceId} ${afterPosition(page, 'a')}
    ${newestFirst(page, 'a')}
  `);
}

/**
 * The OAuth apps whose calls a workspace's request log may hold, by name (at most 500): its own
 * apps and those its members connected (registered elsewhere, or self-registered).
 */
export function listWorkspaceAppNames(db: Db, workspaceId: string) {
  return db.any(sql.type(z.object({ id: z.string(), name: z.string() }))`
    select id, name from oauth_apps
    where workspace_id = ${workspaceId}
       or id in (select app_id from oauth_grants where workspace_id = ${workspaceId})
    order by name, id
    limit 500
  `);
}
