import type { RequestHandler } from 'express';

import { countFailedDeliveriesSince, findWorkspaceEndpoint } from '../../../shared/db/queries/webhooks.ts';
import { parseSince, resendSinceLimit } from '../../../shared/webhooks/resend.ts';
import { rotationOverlap } from '../../../shared/webhooks/rotation.ts';
import type { BrowserContext } from '../browserContext.ts';
import { confirmView } from '../confirm.ts';
import { html, type SafeHtml } from '../html.ts';
import { developerContext, param, when } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';
import { badSince, sendDeliveries } from './webhooksPages.ts';

/** The overlaps the console offers (the CLI takes any up to rotationOverlap.maxSeconds). */
const overlapChoices: readonly [seconds: number, label: string][] = [
  [rotationOverlap.defaultSeconds, '24 hours'],
  [3_600, '1 hour'],
  [3 * 86_400, '3 days'],
  [rotationOverlap.maxSeconds, '7 days'],
  [0, 'No overlap: expire the old secret now'],
];

const overlapField: SafeHtml = html`<label for="overlap">Keep signing with the old secret for</label>
  <select id="overlap" name="overlap">
    ${overlapChoices.map(([seconds, label]) => html`<option value="${String(seconds)}">${label}</option>`)}
  </select>`;

const words = {
  rotate: {
    title: 'Rotate a signing secret',
    heading: (url: string) => `Rotate the signing secret of ${url}?`,
    consequence:
      'A new secret is made and shown once on the next page. For the overlap you choose, every delivery is signed with both the new and the old secret, so your receiver accepts them while you give it the new one; after that, only the new one signs.',
    submit: 'Rotate secret',
    path: 'rotate',
    fields: overlapField,
  },
  expire: {
    title: 'Expire the old signing secret',
    heading: (url: string) => `Stop signing deliveries to ${url} with the old secret?`,
    consequence:
      'From now on deliveries carry only the new secret’s signature: a receiver still holding the old secret rejects them.',
    submit: 'Expire old secret',
    path: 'expire-old-secret',
    fields: html``,
  },
  disable: {
    title: 'Disable an endpoint',
    heading: (url: string) => `Disable ${url}?`,
    consequence:
      'Nothing is sent to this endpoint while it is disabled; events that happen meanwhile are not delivered to it. You can enable it again.',
    submit: 'Disable endpoint',
    path: 'enabled',
    fields: html`<input type="hidden" name="enabled" value="off" />`,
  },
} as const;

/**
 * GET /console/:memberId/webhooks/:endpointId/{rotate,disable,expire-old-secret}: what the action
 * does, and its button (expiring when no old secret is in force says so instead).
 */
export function confirmWebhookAction(web: BrowserContext, action: keyof typeof words): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks');
    if (!c) return;
    const endpoint = await findWorkspaceEndpoint(
      web.pool,
      String(req.params.endpointId),
      c.member.workspace_id,
    );
    if (!endpoint) return sendConsoleError(res, c, 404, 'Not found', 'No such webhook in this workspace.');
    const w = words[action];
    if (action === 'expire' && endpoint.previous_secret_until === null) {
      const view = html`<h1>No old secret to expire</h1>
        <p>Deliveries to <code>${endpoint.url}</code> are signed with its current secret alone.</p>
        <p><a href="${c.base}/webhooks/${endpoint.id}">Back to the webhook</a></p>`;
      return sendConsolePage(res, 200, w.title, c, 'webhooks', view);
    }
    const view = confirmView({
      heading: w.heading(endpoint.url),
      consequence: w.consequence,
      action: `${c.base}/webhooks/${endpoint.id}/${w.path}`,
      csrf: c.csrf,
      submit: w.submit,
      cancel: `${c.base}/webhooks`,
      fields: w.fields,
    });
    sendConsolePage(res, 200, w.title, c, 'webhooks', view);
  };
}

/**
 * GET /console/:memberId/webhooks/:endpointId/resend?since=ISO (the deliveries page's "Resend
 * failed since…" form): how many failed deliveries that would send again, and its button.
 */
export function confirmResendSince(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'change webhooks');
    if (!c) return;
    const endpointId = String(req.params.endpointId);
    const since = parseSince(param(req, 'since'));
    if (!since) {
      return sendDeliveries(web, c, res, endpointId, '', { error: badSince, since: param(req, 'since') });
    }
    const endpoint = await findWorkspaceEndpoint(web.pool, endpointId, c.member.workspace_id);
    if (!endpoint) return sendConsoleError(res, c, 404, 'Not found', 'No such webhook in this workspace.');
    const failed = await countFailedDeliveriesSince(
      web.pool,
      endpoint.id,
      since.toISOString(),
      resendSinceLimit + 1,
    );
    const back = `${c.base}/webhooks/${endpoint.id}`;
    const at = when(since.toISOString());
    if (failed === 0) {
      const view = html`<h1>Nothing to resend</h1>
        <p>No delivery to <code>${endpoint.url}</code> created since ${at} has failed.</p>
        <p><a href="${back}">Back to deliveries</a></p>`;
      return sendConsolePage(res, 200, 'Resend failed deliveries', c, 'webhooks', view);
    }
    const many = failed > resendSinceLimit;
    const view = confirmView({
      heading: `Resend ${many ? `the first ${resendSinceLimit} of more than ${resendSinceLimit}` : failed} failed deliver${failed === 1 ? 'y' : 'ies'} since ${at}?`,
      consequence:
        `Each is sent to ${endpoint.url} again now, oldest first, as a new attempt of the same event: the same webhook-id, so a receiver that deduplicates on it ignores one it already handled.` +
        (many ? ` At most ${resendSinceLimit} are resent at a time: resend again for the rest.` : ''),
      action: `${back}/resend`,
      csrf: c.csrf,
      submit: 'Resend deliveries',
      cancel: back,
      fields: html`<input type="hidden" name="since" value="${since.toISOString()}" />`,
    });
    sendConsolePage(res, 200, 'Resend failed deliveries', c, 'webhooks', view);
  };
}
