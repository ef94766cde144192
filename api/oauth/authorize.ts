import type { Request, RequestHandler, Response } from 'express';

import { listMemberWorkspaces } from '../../shared/db/queries/members.ts';
import { findLiveGrant } from '../../shared/db/queries/oauthGrants.ts';
import { issueCode } from '../../shared/oauth/issueCode.ts';
import { sendErrorPage, sendPage } from '../pages/html.ts';
import type { Person } from '../pages/sessions.ts';
import { consentView, signInView } from '../pages/views.ts';
import { type AuthorizeRequest, parseAuthorizeRequest, redirectWith } from './authorizeRequest.ts';
import type { OauthServer } from './oauthServer.ts';

/** The request's parameters as the consent form repeats them. */
function formParams(r: AuthorizeRequest): Record<string, string> {
  return {
    client_id: r.app.client_id,
    redirect_uri: r.redirectUri,
    response_type: 'code',
    scope: r.scopes.join(' '),
    code_challenge: r.codeChallenge,
    code_challenge_method: 'S256',
    ...(r.state !== undefined ? { state: r.state } : {}),
    ...(r.resource !== undefined ? { resource: r.resource } : {}),
  };
}

async function showSignIn(s: OauthServer, req: Request, res: Response, r: AuthorizeRequest): Promise<void> {
  const returnTo = `/oauth/authorize?${new URLSearchParams(formParams(r)).toString()}`;
  const csrf = await s.csrf.signInToken(req, res, s.sessions.secure);
  sendPage(
    res,
    200,
    'Sign in',
    signInView({ csrf, returnTo, context: `Sign in to continue to ${r.app.name}.` }),
  );
}

/** Redirects to the app with a code for this member, recording (or refreshing) the consent. */
async function approve(
  s: OauthServer,
  res: Response,
  r: AuthorizeRequest,
  member: { memberId: string; workspaceId: string },
  status: 302 | 303,
): Promise<void> {
  const code = await issueCode(
    s.pool,
    {
      appId: r.app.id,
      workspaceId: member.workspaceId,
      memberId: member.memberId,
      scopes: r.scopes,
      redirectUri: r.redirectUri,
      codeChallenge: r.codeChallenge,
      resource: r.resource ?? null,
    },
    s.clock,
  );
  res.redirect(status, redirectWith(r.redirectUri, { code, state: r.state, iss: s.issuer }));
}

/** Parses, and answers the failures: an untrusted client or redirect_uri gets a page, the rest a redirect. */
async function parse(
  s: OauthServer,
  res: Response,
  params: Record<string, unknown>,
  status: 302 | 303,
): Promise<AuthorizeRequest | null> {
  const parsed = await parseAuthorizeRequest(
    s.pool,
    s.doc,
    params,
    s.config.publicBaseUrl,
    s.metadataClients,
  );
  switch (parsed.kind) {
    case 'ok':
      return parsed.request;
    case 'page':
      sendErrorPage(res, 400, 'This authorization request cannot be trusted', parsed.message);
      return null;
    case 'redirect':
      res.redirect(
        status,
        redirectWith(parsed.redirectUri, {
          error: parsed.error.error,
          error_description: parsed.error.description,
          state: parsed.state,
          iss: s.issuer,
        }),
      );
      return null;
    default: {
      const never: never = parsed;
      throw new Error(`unknown outcome ${String(never)}`);
    }
  }
}

async function workspacesOf(s: OauthServer, person: Person) {
  return listMemberWorkspaces(s.pool, person.memberIds);
}

/** GET {authorize_url}: signs the person in if needed, then shows the consent (or honours a remembered one). */
export function showAuthorize(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const r = await parse(s, res, req.query as Record<string, unknown>, 302);
    if (!r) return;
    const person = await s.sessions.current(req);
    if (!person) return showSignIn(s, req, res, r);
    const workspaces = await workspacesOf(s, person);
    if (!r.forceConsent) {
      // Remembered consent: the same app, workspace and (at least) these scopes. With such consents in
      // several workspaces the person still has to say which one.
      const remembered = [];
      for (const w of workspaces) {
        const grant = await findLiveGrant(s.pool, r.app.id, w.member_id);
        if (grant && r.scopes.every((scope) => grant.scopes.includes(scope))) remembered.push(w);
      }
      if (remembered.length === 1) {
        const [w] = remembered;
        return approve(s, res, r, { memberId: w!.member_id, workspaceId: w!.workspace_id }, 302);
      }
    }
    const csrf = await s.csrf.tokenFor(req, res, person.sessionId, s.sessions.secure);
    sendPage(
      res,
      200,
      `Allow ${r.app.name}?`,
      consentView({
        doc: s.doc,
        csrf,
        appName: r.app.name,
        verified: r.app.verified,
        // A self-registered app chose its own name: where the answer goes is what can be trusted.
        selfRegistered:
          r.app.registration === 'operator'
            ? null
            : { sendsTo: new URL(r.redirectUri).host, clientId: r.app.client_id },
        email: person.email,
        scopes: r.scopes,
        workspaces: workspaces.map((w) => ({ memberId: w.member_id, name: w.workspace_name })),
        params: formParams(r),
      }),
    );
  };
}

/** POST {authorize_url}: the person's decision, checked against CSRF, the session and the request again. */
export function decideAuthorize(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const person = await s.sessions.current(req);
    // The consent form's token is bound to the session it was shown in: without it, no form is valid.
    if (!person || !(await s.csrf.verify(req, person.sessionId))) {
      return sendErrorPage(
        res,
        403,
        'Form expired',
        'This form was not sent from this site, or it expired. Go back and try again.',
      );
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    const r = await parse(s, res, body, 303);
    if (!r) return;
    if (body.decision === 'refuse') {
      return res.redirect(
        303,
        redirectWith(r.redirectUri, {
          error: 'access_denied',
          error_description: 'The person refused the request.',
          state: r.state,
          iss: s.issuer,
        }),
      );
    }
    if (body.decision !== 'approve') return sendErrorPage(res, 400, 'No decision', 'Choose Allow or Refuse.');
    const workspace = (await workspacesOf(s, person)).find((w) => w.member_id === body.member);
    if (!workspace) return sendErrorPage(res, 400, 'No workspace', 'Choose one of your workspaces.');
    await approve(s, res, r, { memberId: workspace.member_id, workspaceId: workspace.workspace_id }, 303);
  };
}
