import type { RequestHandler } from 'express';

import { type ApiKeyRow, findApiKey } from '../../../shared/db/queries/apiKeys.ts';
import type { BrowserContext } from '../browserContext.ts';
import { confirmView } from '../confirm.ts';
import { html, type SafeHtml } from '../html.ts';
import type { ConsoleContext } from './consoleContextType.ts';
import { developerContext } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';

/** A change to one active key that a page confirms first. */
type KeyChange = {
  /** Whether the member may make it to this key; otherwise the page answers 404 with `missing`. */
  may: (key: ApiKeyRow, c: ConsoleContext) => boolean;
  missing: string;
  consequence: (name: string) => string;
  fields?: SafeHtml;
};

// By the change's path segment, as in /keys/:keyId/revoke.
const keyChanges = {
  // Any active key of the workspace.
  revoke: {
    may: (key, c) => key.workspace_id === c.member.workspace_id,
    missing: 'No such active key in this workspace.',
    consequence: (name) =>
      `Every call made with ${name} will answer 401 at once, from every server that uses it. This cannot be undone: a revoked key never works again.`,
  },
  // The member's own key only, with the old secret's overlap.
  roll: {
    may: (key, c) => key.member_id === c.member.id,
    missing: 'No such active key of yours.',
    consequence: (name) =>
      `${name} gets a new secret, shown once on the next page. The current secret keeps working for the overlap below, then stops: update every server that uses it before then.`,
    fields: html`<label for="overlap">Old secret keeps working for (seconds, 0 to 86400)</label>
      <input id="overlap" type="number" name="overlap_seconds" min="0" max="86400" value="3600" />`,
  },
} satisfies Record<string, KeyChange>;

/** GET /console/:memberId/keys/:keyId/{verb}: what the change does to this key, and the button that does it. */
function confirmKeyChange(web: BrowserContext, verb: keyof typeof keyChanges): RequestHandler {
  const change: KeyChange = keyChanges[verb];
  const label = verb[0]!.toUpperCase() + verb.slice(1);
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys');
    if (!c) return;
    const key = await findApiKey(web.pool, String(req.params.keyId));
    if (!key || !change.may(key, c) || key.revoked_at !== null) {
      return sendConsoleError(res, c, 404, 'Not found', change.missing);
    }
    const view = confirmView({
      heading: `${label} ${key.name}?`,
      consequence: change.consequence(key.name),
      action: `${c.base}/keys/${key.id}/${verb}`,
      csrf: c.csrf,
      submit: `${label} ${key.name}`,
      cancel: `${c.base}/keys`,
      fields: change.fields,
    });
    sendConsolePage(res, 200, `${label} a key`, c, 'keys', view);
  };
}

export const confirmRevokeKey = (web: BrowserContext) => confirmKeyChange(web, 'revoke');
export const confirmRollKey = (web: BrowserContext) => confirmKeyChange(web, 'roll');
