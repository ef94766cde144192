import type { RequestHandler, Response } from 'express';

import {
  findWorkspaceEndpoint,
  listEndpointDeliveryLog,
  listWorkspaceEndpoints,
} from '../../../shared/db/queries/webhooks.ts';
import { createWebhookEndpoint, setWebhookEnabled } from '../../../shared/webhooks/endpoints.ts';
import { parseSince, resendDeliveries, type ResendTarget } from '../../../shared/webhooks/resend.ts';
import { expireOldWebhookSecret, rotateWebhookSecret } from '../../../shared/webhooks/rotation.ts';
import { sendTestEvent } from '../../../shared/webhooks/testEvent.ts';
import type { BrowserContext } from '../browserContext.ts';
import { isConfirmed, noticeHref } from '../confirm.ts';
import {
  type ConsoleContext,
  consoleContext,
  developerContext,
  field,
  fields,
  type ListSender,
  param,
  showList,
} from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';
import { readPage } from './pageCursor.ts';
import { stashReveal } from './reveals.ts';
import { deliveriesView, webhookReveal, webhooksView } from './webhooksViews.ts';

const wide = { wide: true };
const noSuchWebhook = (res: Response, c: ConsoleContext) =>
  sendConsoleError(res, c, 404, 'Not found', 'No such webhook in this workspace.');

const sendList: ListSender = async (web, c, res, cursor, status = 200, error, typed) => {
  const { items: endpoints, next } = await readPage(cursor, (page) =>
    listWorkspaceEndpoints(web.pool, c.member.workspace_id, page),
  );
  sendConsolePage(
    res,
    status,
    'Webhooks',
    c,
    'webhooks',
    webhooksView(c, endpoints, next, error, typed),
    wide,
  );
};

/** GET /console/:memberId/webhooks */
export const showWebhooks = (web: BrowserContext) => showList(web, sendList);

/** POST /console/:memberId/webhooks: the same rules as `webhook create`. */
export function createWebhook(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const created = await createWebhookEndpoint(web.pool, {
      projectId: field(req, 'project'),
      url: field(req, 'url'),
      events: fields(req, 'events'),
      allowPrivate: web.config.webhookAllowPrivate,
      forMember: true,
      workspaceId: c.member.workspace_id,
    });
    if ('problem' in created) {
      const typed = { url: field(req, 'url'), project: field(req, 'project'), events: fields(req, 'events') };
      return sendList(web, c, res, '', 400, created.problem.message, typed);
    }
    const reveal = await stashReveal(
      web,
      c,
      req,
      webhookReveal(c, 'Webhook added', field(req, 'url'), created.endpoint.secret),
    );
    res.redirect(303, reveal);
  };
}

/**
 * POST /console/:memberId/webhooks/:endpointId/rotate, from its confirmation page, which chooses
 * the overlap (`overlap`, seconds) during which the old secret signs deliveries too.
 */
export function rotateWebhook(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const endpointId = String(req.params.endpointId);
    if (!isConfirmed(req)) return res.redirect(303, `${c.base}/webhooks/${endpointId}/rotate`);
    const overlap = field(req, 'overlap');
    const result = await rotateWebhookSecret(web.pool, {
      endpointId,
      workspaceId: c.member.workspace_id,
      overlapSeconds: /^\d{1,7}$/.test(overlap) ? Number(overlap) : -1,
    });
    if ('problem' in result) {
      if (result.problem.code === 'not_found') return noSuchWebhook(res, c);
      return sendConsoleError(res, c, 400, 'Cannot rotate', result.problem.message);
    }
    const { url, secret, previousSecretUntil } = result.rotated;
    const reveal = await stashReveal(
      web,
      c,
      req,
      webhookReveal(c, 'Secret rotated', url, secret, previousSecretUntil),
    );
    res.redirect(303, reveal);
  };
}

/** POST /console/:memberId/webhooks/:endpointId/expire-old-secret, from its confirmation page. */
export function expireOldSecret(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const endpointId = String(req.params.endpointId);
    if (!isConfirmed(req)) return res.redirect(303, `${c.base}/webhooks/${endpointId}/expire-old-secret`);
    const row = await expireOldWebhookSecret(web.pool, endpointId, c.member.workspace_id);
    if (!row) return noSuchWebhook(res, c);
    res.redirect(303, noticeHref(`${c.base}/webhooks/${endpointId}`, 'webhook-old-secret-expired'));
  };
}

/**
 * POST /console/:memberId/webhooks/:endpointId/test: one signed `webhook.test` event to this
 * endpoint, then back to its deliveries with what happened (a reload sends nothing); refused,
 * with a notice, while the endpoint's last one is under testEventIntervalSeconds old.
 */
export function sendTestWebhook(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const endpointId = String(req.params.endpointId);
    const result = await sendTestEvent(web.pool, {
      endpointId,
      workspaceId: c.member.workspace_id,
      from: 'console',
    });
    const back = `${c.base}/webhooks/${endpointId}`;
    if ('problem' in result) {
      const { code, message } = result.problem;
      if (code === 'not_found') return noSuchWebhook(res, c);
      // Refused for being too soon, it still redirects: a reload of the page asks again for nothing.
      if (code === 'rate_limited') return res.redirect(303, noticeHref(back, 'webhook-test-too-soon'));
      return sendConsoleError(res, c, 409, 'Test event not sent', message);
    }
    res.redirect(303, noticeHref(back, 'webhook-test-sent'));
  };
}

/** POST /console/:memberId/webhooks/:endpointId/enabled */
export function toggleWebhook(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const endpointId = String(req.params.endpointId);
    const enabled = field(req, 'enabled') === 'on';
    // Disabling stops deliveries: it needs its confirmation page's field; enabling does not.
    if (!enabled && !isConfirmed(req)) return res.redirect(303, `${c.base}/webhooks/${endpointId}/disable`);
    const row = await setWebhookEnabled(web.pool, endpointId, c.member.workspace_id, enabled);
    if (!row) return noSuchWebhook(res, c);
    res.redirect(303, noticeHref(`${c.base}/webhooks`, enabled ? 'webhook-enabled' : 'webhook-disabled'));
  };
}

/**
 * The deliveries page of one of the workspace's endpoints (404 otherwise); `refused` is why the
 * "resend failed since" form was refused, shown beside it with what was typed.
 */
export async function sendDeliveries(
  web: BrowserContext,
  c: ConsoleContext,
  res: Response,
  endpointId: string,
  cursor: string,
  refused?: { error: string; since: string },
): Promise<void> {
  const endpoint = await findWorkspaceEndpoint(web.pool, endpointId, c.member.workspace_id);
  if (!endpoint) return noSuchWebhook(res, c);
  const { items: deliveries, next } = await readPage(cursor, (page) =>
    listEndpointDeliveryLog(web.pool, endpoint.id, page),
  );
  sendConsolePage(
    res,
    refused ? 400 : 200,
    'Deliveries',
    c,
    'webhooks',
    deliveriesView(c, endpoint, deliveries, next, refused),
    wide,
  );
}

/** GET /console/:memberId/webhooks/:endpointId: every delivery and its attempts. */
export function showDeliveries(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    await sendDeliveries(web, c, res, String(req.params.endpointId), param(req, 'cursor'));
  };
}

/**
 * Resends through the domain (same rules as `webhook resend`), as the signed-in member, then back
 * to the deliveries page with what happened: a reload of that page repeats nothing.
 */
async function resendAndReturn(
  web: BrowserContext,
  c: ConsoleContext,
  res: Response,
  endpointId: string,
  target: ResendTarget,
) {
  const result = await resendDeliveries(web.pool, {
    endpointId,
    workspaceId: c.member.workspace_id,
    actor: c.member.email,
    target,
  });
  if ('problem' in result) {
    const { code, message } = result.problem;
    return sendConsoleError(res, c, code === 'not_found' ? 404 : 409, 'Cannot resend', message);
  }
  const done = 'since' in target ? 'deliveries-resent' : 'delivery-resent';
  res.redirect(303, noticeHref(`${c.base}/webhooks/${endpointId}`, done));
}

/** POST /console/:memberId/webhooks/:endpointId/deliveries/:deliveryId/resend: one delivery again. */
export function resendWebhookDelivery(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    await resendAndReturn(web, c, res, String(req.params.endpointId), {
      deliveryId: String(req.params.deliveryId),
    });
  };
}

/**
 * POST /console/:memberId/webhooks/:endpointId/resend: the failed deliveries since a time, from
 * its confirmation page (which alone carries `confirm`; posted without it, it goes there).
 */
export function resendFailedSince(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const endpointId = String(req.params.endpointId);
    const since = parseSince(field(req, 'since'));
    if (!since) {
      return sendDeliveries(web, c, res, endpointId, '', { error: badSince, since: field(req, 'since') });
    }
    if (!isConfirmed(req)) {
      return res.redirect(
        303,
        `${c.base}/webhooks/${endpointId}/resend?since=${encodeURIComponent(since.toISOString())}`,
      );
    }
    await resendAndReturn(web, c, res, endpointId, { since });
  };
}

/** Said beside the "resend failed since" field when what was sent is not a time. */
export const badSince = 'Enter a date and time, such as 2026-11-29T08:30 (UTC).';
