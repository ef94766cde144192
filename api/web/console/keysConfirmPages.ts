import type { RequestHandler } from 'express';

import { findApiKey } from '../../../shared/db/queries/apiKeys.ts';
import type { BrowserContext } from '../browserContext.ts';
import { confirmView } from '../confirm.ts';
import { html } from '../html.ts';
import { developerContext } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';

/** GET /console/:memberId/keys/:keyId/revoke: what revoking this key does, and the button that does it. */
export function confirmRevokeKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys');
    if (!c) return;
    const key = await findApiKey(web.pool, String(req.params.keyId));
    if (!key || key.workspace_id !== c.member.workspace_id || key.revoked_at !== null) {
      return sendConsoleError(res, c, 404, 'Not found', 'No such active key in this workspace.');
    }
    const view = confirmView({
      heading: `Revoke ${key.name}?`,
      consequence: `Every call made with ${key.name} will answer 401 at once, from every server that uses it. This cannot be undone: a revoked key never works again.`,
      action: `${c.base}/keys/${key.id}/revoke`,
      csrf: c.csrf,
      submit: `Revoke ${key.name}`,
      cancel: `${c.base}/keys`,
    });
    sendConsolePage(res, 200, 'Revoke a key', c, 'keys', view);
  };
}

/** GET /console/:memberId/keys/:keyId/roll: the member's own key only, with the old secret's overlap. */
export function confirmRollKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys');
    if (!c) return;
    const key = await findApiKey(web.pool, String(req.params.keyId));
    if (!key || key.member_id !== c.member.id || key.revoked_at !== null) {
      return sendConsoleError(res, c, 404, 'Not found', 'No such active key of yours.');
    }
    const view = confirmView({
      heading: `Roll ${key.name}?`,
      consequence: `${key.name} gets a new secret, shown once on the next page. The current secret keeps working for the overlap below, then stops: update every server that uses it before then.`,
      action: `${c.base}/keys/${key.id}/roll`,
      csrf: c.csrf,
      submit: `Roll ${key.name}`,
      cancel: `${c.base}/keys`,
      fields: html`<label for="overlap">Old secret keeps working for (seconds, 0 to 86400)</label>
        <input id="overlap" type="number" name="overlap_seconds" min="0" max="86400" value="3600" />`,
    });
    sendConsolePage(res, 200, 'Roll a key', c, 'keys', view);
  };
}
