import { type Express, Router } from 'express';

import { systemClock } from '../../shared/primitives/clock.ts';
import type { AppDeps } from '../deps.ts';
import { installAssets } from './assets.ts';
import { makeBrowserContext } from './browserContext.ts';
import { installConsole } from './console/index.ts';
import { installOauthServer } from './oauth/index.ts';
import { makeOauthServer } from './oauth/oauthServer.ts';
import { pageErrors } from './pageErrors.ts';
import { makeAccountDeps } from './pages/accountDeps.ts';
import { installAccountPages } from './pages/index.ts';

/**
 * The browser tier and the OAuth endpoints, outside the API base and with error bodies of their own:
 * sign-in, consent, account, console and status pages. The OAuth server, the account pages and the
 * console are siblings on one pages router, each given what it needs; they share the browser context.
 */
export function installWeb(app: Express, deps: AppDeps): void {
  const options = deps.oauth ?? {};
  const browser = makeBrowserContext(deps, options.clock ?? systemClock);
  // The OAuth endpoints and the account page end tokens; this process's cached lookups go at once.
  const tokenPages = { browser, options, forgetTokens: () => deps.accessTokenCache?.clear() };

  const pages = Router();
  installAssets(pages);
  installOauthServer(app, pages, makeOauthServer(tokenPages));
  installAccountPages(pages, makeAccountDeps(tokenPages));
  installConsole(pages, browser, { status: deps.status, objectStore: deps.objectStore });
  pages.use(pageErrors(browser.logger));
  app.use(pages);
}
