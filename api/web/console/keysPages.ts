import type { RequestHandler } from 'express';

import { findApiKey, listWorkspaceKeys, revokeApiKey } from '../../../shared/db/queries/apiKeys.ts';
import { createApiKey, maxRollOverlapMs, rollApiKey } from '../../../shared/keys/mintKeys.ts';
import type { BrowserContext } from '../browserContext.ts';
import { isConfirmed, noticeHref } from '../confirm.ts';
import { consoleContext, developerContext, field, param } from './context.ts';
import { keyFormValues, readKeyForm } from './keyFormInput.ts';
import { newKeyView } from './keyFormView.ts';
import { keysView } from './keysViews.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';
import { readPage } from './pageCursor.ts';
import { stashReveal } from './reveals.ts';

const wide = { wide: true };

/**
 * Keys are a developer's tools: without developer access a member may look, not mint, roll or
 * revoke. A key acts as the member who created it, so only that member may roll it (a roll hands
 * over a working secret: of a colleague's key, their identity); any developer may revoke any key
 * of the workspace, so stopping a leak never waits for its owner, and the revocation records who.
 */

/** GET /console/:memberId/keys: the working keys, then the revoked ones apart (each paged on its own). */
export function showKeys(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const list = (revoked: boolean, cursor: string) =>
      readPage(cursor, (page) => listWorkspaceKeys(web.pool, c.member.workspace_id, revoked, page));
    const [live, revoked] = await Promise.all([
      list(false, param(req, 'cursor')),
      list(true, param(req, 'revoked_cursor')),
    ]);
    const keys = { live, revoked };
    sendConsolePage(res, 200, 'API keys', c, 'keys', keysView(c, keys, web.clock()), wide);
  };
}

/** GET /console/:memberId/keys/new */
export function showNewKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys');
    if (!c) return;
    sendConsolePage(res, 200, 'Create an API key', c, 'keys', newKeyView(c, web.doc), wide);
  };
}

/**
 * POST /console/:memberId/keys: the same rules and the same minting as `key create`. A refused form
 * is shown again (400) with what was typed and each problem at its field: nothing was done, so
 * there is nothing a reload could repeat, and no value travels in a URL.
 */
export function createKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys', { form: true });
    if (!c) return;
    const values = keyFormValues(req);
    const read = await readKeyForm(web, c, values);
    if ('errors' in read) {
      const view = newKeyView(c, web.doc, values, read.errors);
      return sendConsolePage(res, 400, 'Error: Create an API key', c, 'keys', view, wide);
    }
    const key = await web.pool.transaction((tx) => createApiKey(tx, read.input));
    const reveal = await stashReveal(web, c, req, {
      title: 'Key created',
      heading: read.input.name,
      note: 'Your new key’s secret.',
      fields: [{ label: 'Secret', value: key.secret, secret: true }],
      back: { href: `${c.base}/keys`, label: 'Back to keys' },
    });
    res.redirect(303, reveal);
  };
}

/** POST /console/:memberId/keys/:keyId/revoke: any key of the workspace, recorded as this member's doing. */
export function revokeKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys', { form: true });
    if (!c) return;
    const key = await findApiKey(web.pool, String(req.params.keyId));
    if (!key || key.workspace_id !== c.member.workspace_id) {
      return sendConsoleError(res, c, 404, 'Not found', 'No such key in this workspace.');
    }
    // Without its confirmation page's field, nothing changes: the confirmation is shown instead.
    if (!isConfirmed(req)) return res.redirect(303, `${c.base}/keys/${key.id}/revoke`);
    await revokeApiKey(web.pool, key.id, c.member.id);
    res.redirect(303, noticeHref(`${c.base}/keys`, 'key-revoked'));
  };
}

/**
 * POST /console/:memberId/keys/:keyId/roll: the same as `key roll`, for the signed-in member's own
 * keys only. A colleague's key answers exactly as a key that does not exist.
 */
export function rollKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys', { form: true });
    if (!c) return;
    const key = await findApiKey(web.pool, String(req.params.keyId));
    if (!key || key.member_id !== c.member.id || key.revoked_at !== null) {
      return sendConsoleError(res, c, 404, 'Not found', 'No such active key of yours.');
    }
    if (!isConfirmed(req)) return res.redirect(303, `${c.base}/keys/${key.id}/roll`);
    const seconds = Number(field(req, 'overlap_seconds') || '3600');
    if (!Number.isInteger(seconds) || seconds < 0 || seconds * 1000 > maxRollOverlapMs) {
      return sendConsoleError(res, c, 400, 'Bad overlap', 'The overlap is 0 to 86400 seconds (24 hours).');
    }
    const rolled = await rollApiKey(web.pool, {
      keyId: key.id,
      workspaceId: key.workspace_id,
      livemode: key.livemode,
      overlapMs: seconds * 1000,
      now: web.clock(),
    });
    if (!rolled) return sendConsoleError(res, c, 404, 'Not found', 'No such active key of yours.');
    const until = rolled.previousUntil.replace('T', ' ').slice(0, 19);
    const reveal = await stashReveal(web, c, req, {
      title: 'Key rolled',
      heading: key.name,
      note: `The key has a new secret; the old one works until ${until} UTC.`,
      fields: [{ label: 'Secret', value: rolled.secret, secret: true }],
      back: { href: `${c.base}/keys`, label: 'Back to keys' },
    });
    res.redirect(303, reveal);
  };
}
