import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

export type NewOauthApp = {
  id: string;
  projectId: string;
  workspaceId: string;
  name: string;
  clientId: string;
  clientSecretHash: Buffer | null;
  type: 'server' | 'public';
  redirectUris: string[];
  scopes: string[];
  verified: boolean;
};

const insertedAppRow = z.object({ id: z.string(), client_id: z.string() });

export function insertOauthApp(db: Db, app: NewOauthApp) {
  return db.one(sql.type(insertedAppRow)`
    insert into oauth_apps (id, project_id, workspace_id, name, client_id, client_secret_hash, type, redirect_uris,
                            scopes, verified)
    values (${app.id}, ${app.projectId}, ${app.workspaceId}, ${app.name}, ${app.clientId},
            ${app.clientSecretHash === null ? null : sql.binary(app.clientSecretHash)}, ${app.type},
            ${sql.array(app.redirectUris, 'text')}, ${sql.array(app.scopes, 'text')}, ${app.verified})
    returning id, client_id
  `);
}
