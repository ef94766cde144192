import type { RequestHandler, Response } from 'express';

import {
  findWorkspaceEndpoint,
  listEndpointDeliveryLog,
  listWorkspaceEndpoints,
} from '../../../shared/db/queries/webhooks.ts';
import {
  createWebhookEndpoint,
  resendDelivery,
  rotateWebhookSecret,
  setWebhookEnabled,
} from '../../../shared/webhooks/endpoints.ts';
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

/** POST /console/:memberId/webhooks/:endpointId/rotate */
export function rotateWebhook(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    if (!isConfirmed(req)) {
      return res.redirect(303, `${c.base}/webhooks/${String(req.params.endpointId)}/rotate`);
    }
    const rotated = await rotateWebhookSecret(web.pool, String(req.params.endpointId), c.member.workspace_id);
    if (!rotated) return noSuchWebhook(res, c);
    const reveal = await stashReveal(
      web,
      c,
      req,
      webhookReveal(c, 'Secret rotated', rotated.url, rotated.secret),
    );
    res.redirect(303, reveal);
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

/** GET /console/:memberId/webhooks/:endpointId: every delivery and its attempts. */
export function showDeliveries(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const endpoint = await findWorkspaceEndpoint(
      web.pool,
      String(req.params.endpointId),
      c.member.workspace_id,
    );
    if (!endpoint) return noSuchWebhook(res, c);
    const { items: deliveries, next } = await readPage(param(req, 'cursor'), (page) =>
      listEndpointDeliveryLog(web.pool, endpoint.id, page),
    );
    sendConsolePage(
      res,
      200,
      'Deliveries',
      c,
      'webhooks',
      deliveriesView(c, endpoint, deliveries, next),
      wide,
    );
  };
}

/** POST /console/:memberId/webhooks/:endpointId/deliveries/:deliveryId/resend: one more attempt by the worker. */
export function resendWebhookDelivery(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks', { form: true });
    if (!c) return;
    const result = await web.pool.transaction((tx) =>
      resendDelivery(tx, String(req.params.deliveryId), c.member.workspace_id),
    );
    if ('problem' in result) {
      return sendConsoleError(
        res,
        c,
        result.problem.code === 'not_found' ? 404 : 409,
        'Cannot resend',
        result.problem.message,
      );
    }
    res.redirect(303, noticeHref(`${c.base}/webhooks/${String(req.params.endpointId)}`, 'delivery-resent'));
  };
}
