import type { RequestHandler } from 'express';

import { findWorkspaceEndpoint } from '../../../shared/db/queries/webhooks.ts';
import type { BrowserContext } from '../browserContext.ts';
import { confirmView } from '../confirm.ts';
import { html } from '../html.ts';
import { developerContext } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';

const words = {
  rotate: {
    title: 'Rotate a signing secret',
    heading: (url: string) => `Rotate the signing secret of ${url}?`,
    consequence:
      'Deliveries are signed with a new secret, shown once on the next page, from now on: the receiver rejects them until it has the new secret.',
    submit: 'Rotate secret',
    fields: html``,
  },
  disable: {
    title: 'Disable an endpoint',
    heading: (url: string) => `Disable ${url}?`,
    consequence:
      'Nothing is sent to this endpoint while it is disabled; events that happen meanwhile are not delivered to it. You can enable it again.',
    submit: 'Disable endpoint',
    fields: html`<input type="hidden" name="enabled" value="off" />`,
  },
} as const;

/** GET /console/:memberId/webhooks/:endpointId/{rotate,disable}: what the action does, and its button. */
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
    const view = confirmView({
      heading: w.heading(endpoint.url),
      consequence: w.consequence,
      action: `${c.base}/webhooks/${endpoint.id}/${action === 'rotate' ? 'rotate' : 'enabled'}`,
      csrf: c.csrf,
      submit: w.submit,
      cancel: `${c.base}/webhooks`,
      fields: w.fields,
    });
    sendConsolePage(res, 200, w.title, c, 'webhooks', view);
  };
}
