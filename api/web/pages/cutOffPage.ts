import type { RequestHandler } from 'express';

import { listConnectedApps } from '../../../shared/db/queries/oauthGrants.ts';
import { confirmView } from '../confirm.ts';
import { sendErrorPage } from '../html.ts';
import type { AccountDeps } from './accountDeps.ts';
import { sendAccountPage } from './accountFrame.ts';

/** GET /account/apps/:grantId/revoke: what cutting this app off does, and the button that does it. */
export function confirmCutOff(s: AccountDeps): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    if (!person) return res.redirect(303, '/account/sign-in?return_to=/account');
    const apps = await listConnectedApps(s.pool, person.memberIds);
    const app = apps.find((a) => a.grant_id === String(req.params.grantId));
    if (!app) return sendErrorPage(res, 404, 'Not found', 'No such connected app.');
    const csrf = await s.csrf.tokenFor(req, res, person.sessionId, s.sessions.secure);
    const view = confirmView({
      heading: `Cut off ${app.app_name}?`,
      consequence: `${app.app_name} loses its access to ${app.workspace_name} at once: every token it holds stops working, and it must ask for your consent again to come back.`,
      action: `/account/apps/${app.grant_id}/revoke`,
      csrf,
      submit: `Cut off ${app.app_name}`,
      cancel: '/account',
    });
    await sendAccountPage(s, res, { person, csrf, title: 'Cut off an app', body: view });
  };
}
