import type { Request, RequestHandler, Response } from 'express';

import { findGrantOfMembers, listConnectedApps, revokeGrant } from '../../shared/db/queries/oauthGrants.ts';
import { signIn } from '../../shared/oauth/signIn.ts';
import type { OauthServer } from '../oauth/oauthServer.ts';
import { sendErrorPage, sendPage } from './html.ts';
import { safeReturnTo } from './returnTo.ts';
import { accountView, signInView } from './views.ts';

const badForm = 'This form was not sent from this site, or it expired. Go back and try again.';

/** GET /account/sign-in (and /account itself when signed out). */
export function showSignIn(s: OauthServer): RequestHandler {
  return (req, res) => sendSignIn(s, req, res, safeReturnTo(req.query.return_to));
}

async function sendSignIn(s: OauthServer, req: Request, res: Response, returnTo: string): Promise<void> {
  const csrf = await s.csrf.tokenFor(req, res, null, s.sessions.secure);
  sendPage(res, 200, 'Sign in', signInView({ csrf, returnTo }));
}

/** POST /account/sign-in: email and password, throttled per account and per address. */
export function submitSignIn(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const current = await s.sessions.current(req);
    if (!(await s.csrf.verify(req, current?.sessionId ?? null)) && !(await s.csrf.verify(req, null))) {
      return sendErrorPage(res, 403, 'Form expired', badForm);
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    const email = typeof body.email === 'string' ? body.email : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const result = await signIn(s.pool, { email, password, ip: req.ip }, s.signInLimits, s.clock);
    if (result.kind === 'ok') {
      await s.sessions.start(req, res, result.email, result.memberIds);
      return res.redirect(303, returnTo);
    }
    const csrf = await s.csrf.tokenFor(req, res, null, s.sessions.secure);
    const error =
      result.kind === 'throttled'
        ? 'Too many failed attempts. Wait a few minutes and try again.'
        : 'That email and password do not match an account.';
    sendPage(
      res,
      result.kind === 'throttled' ? 429 : 401,
      'Sign in',
      signInView({ csrf, returnTo, email, error }),
    );
  };
}

/** POST /account/sign-out. */
export function signOut(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    if (person) {
      if (!(await s.csrf.verify(req, person.sessionId))) {
        return sendErrorPage(res, 403, 'Form expired', badForm);
      }
      await s.sessions.end(person, res);
    }
    res.redirect(303, '/account/sign-in');
  };
}

/** GET /account: the person's connected apps, per workspace. */
export function showAccount(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    if (!person) return sendSignIn(s, req, res, '/account');
    const apps = await listConnectedApps(s.pool, person.memberIds);
    const csrf = await s.csrf.tokenFor(req, res, person.sessionId, s.sessions.secure);
    sendPage(res, 200, 'Your account', accountView({ doc: s.doc, csrf, email: person.email, apps }));
  };
}

/** POST /account/apps/:grantId/revoke: cuts an app off (its consent and every token), in one transaction. */
export function cutOffApp(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    if (!person) return res.redirect(303, '/account/sign-in?return_to=/account');
    if (!(await s.csrf.verify(req, person.sessionId))) {
      return sendErrorPage(res, 403, 'Form expired', badForm);
    }
    const grantId = String(req.params.grantId);
    const found = await s.pool.transaction(async (tx) => {
      const grant = await findGrantOfMembers(tx, grantId, person.memberIds);
      if (grant) await revokeGrant(tx, grant.id);
      return grant !== null;
    });
    if (!found) return sendErrorPage(res, 404, 'Not found', 'No such connected app.');
    s.forgetTokens();
    res.redirect(303, '/account');
  };
}
