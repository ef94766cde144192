import type { RequestHandler } from 'express';

import { findApiKey, listWorkspaceKeys, revokeApiKey } from '../../../shared/db/queries/apiKeys.ts';
import { resolveKeyRequest } from '../../../shared/keys/keyRequest.ts';
import { createApiKey, maxRollOverlapMs, rollApiKey } from '../../../shared/keys/mintKeys.ts';
import type { BrowserContext } from '../browserContext.ts';
import { isConfirmed, noticeHref } from '../confirm.ts';
import { developerContext, field, fields, showList } from './context.ts';
import { keysView, newKeyView } from './keysViews.ts';
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

/** GET /console/:memberId/keys */
export const showKeys = (web: BrowserContext) =>
  showList(web, async (web, c, res, cursor) => {
    const { items: keys, next } = await readPage(cursor, (page) =>
      listWorkspaceKeys(web.pool, c.member.workspace_id, page),
    );
    sendConsolePage(res, 200, 'API keys', c, 'keys', keysView(c, keys, next, web.clock()), wide);
  });

/** GET /console/:memberId/keys/new */
export function showNewKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys');
    if (!c) return;
    sendConsolePage(res, 200, 'Create an API key', c, 'keys', newKeyView(c, web.doc), wide);
  };
}

/** POST /console/:memberId/keys: the same rules and the same minting as `key create`. */
export function createKey(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change keys', { form: true });
    if (!c) return;
    const level = field(req, 'scope_level');
    const capText = field(req, 'monthly_spend_cap');
    const expiresText = field(req, 'expires_at');
    const fail = (message: string) =>
      sendConsolePage(res, 400, 'Create an API key', c, 'keys', newKeyView(c, web.doc, message), wide);
    if (capText !== '' && !/^\d{1,15}$/.test(capText)) return fail('The spend cap must be a whole number.');
    const resolved = await resolveKeyRequest(web.pool, web.doc, {
      member: c.member,
      projectIds: fields(req, 'projects'),
      livemode: field(req, 'mode') === 'live',
      name: field(req, 'name') || undefined,
      packages: level === 'package' ? fields(req, 'packages') : undefined,
      operations: level === 'operation' ? fields(req, 'operations') : undefined,
      // datetime-local has no zone: the form says UTC.
      expiresAt: expiresText === '' ? undefined : `${expiresText}Z`,
      ipAllowlist: field(req, 'ip_allowlist')
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean),
      monthlySpendCapMinor: capText === '' ? null : Number(capText),
    });
    if ('problem' in resolved) return fail(resolved.problem.message);
    const key = await web.pool.transaction((tx) => createApiKey(tx, resolved.input));
    const reveal = await stashReveal(web, c, req, {
      title: 'Key created',
      heading: resolved.input.name,
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
