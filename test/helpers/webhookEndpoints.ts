import { insertWebhookEndpoint } from '../../shared/db/queries/webhooks.ts';
import type { Db } from '../../shared/db/sql.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { newWebhookSecret } from '../../shared/webhooks/signing.ts';

/** A webhook endpoint of the project at `url`, subscribed to `events`, with a fresh secret. */
export function addWebhookEndpoint(
  db: Db,
  project: { workspaceId: string; projectId: string },
  url: string,
  events: string[],
) {
  return insertWebhookEndpoint(db, {
    id: newId('wh'),
    workspaceId: project.workspaceId,
    projectId: project.projectId,
    url,
    events,
    secret: newWebhookSecret(),
  });
}
