import express, { type Router } from 'express';

import { cutOffApp, showAccount, showSignIn, signOut, submitSignIn } from './account.ts';
import type { AccountDeps } from './accountDeps.ts';
import { confirmCutOff } from './cutOffPage.ts';

const formBody = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 });

/** Sign-in, sign-out and the account page (its connected apps), on the browser pages' router. */
export function installAccountPages(pages: Router, s: AccountDeps): void {
  // Bodies are read on these routes only: the public API reads its own, after authentication.
  pages.get('/account', showAccount(s));
  pages.get('/account/sign-in', showSignIn(s));
  pages.post('/account/sign-in', formBody, submitSignIn(s));
  pages.post('/account/sign-out', formBody, signOut(s));
  pages.get('/account/apps/:grantId/revoke', confirmCutOff(s));
  pages.post('/account/apps/:grantId/revoke', formBody, cutOffApp(s));
}
