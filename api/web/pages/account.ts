import type { Request, RequestHandler, Response } from 'express';

import {
  findGrantOfMembers,
  listConnectedApps,
  revokeGrant,
} from '../../../shared/db/queries/oauthGrants.ts';
import { signIn } from '../../../shared/oauth/signIn.ts';
import { isConfirmed, noticeHref, noticeOf } from '../confirm.ts';
import { sendErrorPage, sendPage } from '../html.ts';
import type { AccountDeps } from './accountDeps.ts';
import { sendAccountPage } from './accountFrame.ts';
import { safeReturnTo } from './returnTo.ts';
import { accountView, signInView } from './views.ts';

const badForm = 'This form was not sent from this site, or it expired. Go back and try again.';

const signInErrors = {
  form: 'This sign-in form expired or was not sent from this site. It has been renewed: sign in again.',
  failed: 'That email and password do not match an account.',
  throttled: 'Too many failed attempts. Wait a few minutes and try again.',
  busy: 'Too many sign-ins are being checked right now. Try again in a moment.',
} as const;

/** GET /account/sign-in (and /account itself when signed out). */
export function showSignIn(s: AccountDeps): RequestHandler {
  return (req, res) => sendSignIn(s, req, res, 200, { returnTo: safeReturnTo(req.query.return_to) });
}

async function sendSignIn(
  s: AccountDeps,
  req: Request,
  res: Response,
  status: number,
  form: { returnTo: string; email?: string; error?: string },
): Promise<void> {
  const csrf = await s.csrf.signInToken(req, res, s.sessions.secure);
  sendPage(res, status, 'Sign in', signInView({ csrf, ...form }));
}

/**
 * POST /account/sign-in: email and password. A stale or foreign form is refused before anything is
 * hashed; then the attempt is throttled per account and per address, and per process by the number
 * of password checks running at once (429 with Retry-After either way, the form kept).
 */
export function submitSignIn(s: AccountDeps): RequestHandler {
  return async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    const email = typeof body.email === 'string' ? body.email : '';
    const password = typeof body.password === 'string' ? body.password : '';
    if (!(await s.csrf.verifySignIn(req))) {
      return sendSignIn(s, req, res, 403, { returnTo, email, error: signInErrors.form });
    }
    const result = await signIn(
      s.pool,
      { email, password, ip: req.ip },
      s.signInLimits,
      s.clock,
      s.passwordChecks,
    );
    if (result.kind === 'ok') {
      s.csrf.endSignIn(res, s.sessions.secure);
      await s.sessions.start(req, res, result.email, result.memberIds);
      return res.redirect(303, returnTo);
    }
    if (result.kind !== 'failed') res.set('Retry-After', String(result.retryAfterSeconds));
    await sendSignIn(s, req, res, result.kind === 'failed' ? 401 : 429, {
      returnTo,
      email,
      error: signInErrors[result.kind],
    });
  };
}

/** POST /account/sign-out. */
export function signOut(s: AccountDeps): RequestHandler {
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

/**
 * GET /account: the person's connected apps, per workspace, inside the console's frame (its
 * navigation leads back to the first workspace's console).
 */
export function showAccount(s: AccountDeps): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    if (!person) return sendSignIn(s, req, res, 200, { returnTo: '/account' });
    const apps = await listConnectedApps(s.pool, person.memberIds);
    const csrf = await s.csrf.tokenFor(req, res, person.sessionId, s.sessions.secure);
    const body = accountView({ doc: s.doc, email: person.email, apps });
    await sendAccountPage(s, res, { person, csrf, title: 'Your account', body, notice: noticeOf(req) });
  };
}

/** POST /account/apps/:grantId/revoke: cuts an app off (its consent and every token), in one transaction. */
export function cutOffApp(s: AccountDeps): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    if (!person) return res.redirect(303, '/account/sign-in?return_to=/account');
    if (!(await s.csrf.verify(req, person.sessionId))) {
      return sendErrorPage(res, 403, 'Form expired', badForm);
    }
    const grantId = String(req.params.grantId);
    // Without its confirmation page's field, nothing changes: the confirmation is shown instead.
    if (!isConfirmed(req)) return res.redirect(303, `/account/apps/${grantId}/revoke`);
    const found = await s.pool.transaction(async (tx) => {
      const grant = await findGrantOfMembers(tx, grantId, person.memberIds);
      if (grant) await revokeGrant(tx, grant.id);
      return grant !== null;
    });
    if (!found) return sendErrorPage(res, 404, 'Not found', 'No such connected app.');
    s.forgetTokens();
    res.redirect(303, noticeHref('/account', 'app-cut-off'));
  };
}
