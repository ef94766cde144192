import type { RequestHandler } from 'express';

import { listWorkspaceOauthApps } from '../../../shared/db/queries/oauthApps.ts';
import { registerOauthApp } from '../../../shared/oauth/registerApp.ts';
import type { BrowserContext } from '../browserContext.ts';
import { appReveal, appsView } from './appsViews.ts';
import { developerContext, field, fields, type ListSender, showList } from './context.ts';
import { sendConsolePage } from './layout.ts';
import { readPage } from './pageCursor.ts';
import { stashReveal } from './reveals.ts';

const sendApps: ListSender = async (web, c, res, cursor, status = 200, error) => {
  const { items: apps, next } = await readPage(cursor, (page) =>
    listWorkspaceOauthApps(web.pool, c.member.workspace_id, page),
  );
  sendConsolePage(res, status, 'OAuth apps', c, 'apps', appsView(c, web.doc, apps, next, error), {
    wide: true,
  });
};

/** GET /console/:memberId/apps: the workspace's OAuth apps and, for developers, the registration form. */
export const showApps = (web: BrowserContext) => showList(web, sendApps);

/** POST /console/:memberId/apps: the same registration as `oauth-app create`, never verified from here. */
export function registerApp(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await developerContext(web, req, res, 'register apps', { form: true });
    if (!c) return;
    const registered = await registerOauthApp(web.pool, web.doc, {
      projectId: field(req, 'project'),
      name: field(req, 'name'),
      type: field(req, 'type'),
      redirectUris: field(req, 'redirect_uris').split(/\s+/).filter(Boolean),
      scopes: fields(req, 'scopes'),
      // Verification is an operator's judgement (`oauth-app verify`), not the developer's.
      verified: false,
      workspaceId: c.member.workspace_id,
    });
    if ('problem' in registered) return sendApps(web, c, res, '', 400, registered.problem.message);
    const { clientId, clientSecret } = registered.app;
    res.redirect(
      303,
      await stashReveal(web, c, req, appReveal(c, field(req, 'name'), clientId, clientSecret)),
    );
  };
}
