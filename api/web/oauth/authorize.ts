import type { Request, RequestHandler, Response } from 'express';

import { listMemberWorkspaces } from '../../../shared/db/queries/members.ts';
import { findLiveGrant } from '../../../shared/db/queries/oauthGrants.ts';
import { issueCode } from '../../../shared/oauth/issueCode.ts';
import { sendErrorPage, sendPage } from '../html.ts';
import { consentView, signInView } from '../pages/views.ts';
import type { Person } from '../sessions.ts';
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

/**
 * Redirects to the app with a code for this member, recording (or refreshing) the consent; a
 * metadata-document app gets its row here. False when a remembered consent was withdrawn meanwhile.
 */
async function approve(
  s: OauthServer,
  res: Response,
  r: AuthorizeRequest,
  member: { memberId: string; workspaceId: string },
  remembered: boolean,
): Promise<boolean> {
  const issued = await issueCode(
    s.pool,
    {
      app: r.app.consentTo,
      workspaceId: member.workspaceId,
      memberId: member.memberId,
      scopes: r.scopes,
      redirectUri: r.redirectUri,
      codeChallenge: r.codeChallenge,
      resource: r.resource ?? null,
      remembered,
    },
    s.clock,
  );
  if (!issued) return false;
  // A narrower consent ended the wider tokens: this process must not keep serving them from its cache.
  if (issued.endedTokens) s.forgetTokens();
  const to = redirectWith(r.redirectUri, { code: issued.code, state: r.state, iss: s.issuer });
  res.redirect(remembered ? 302 : 303, to);
  return true;
}

/** Parses, and answers the failures: an untrusted client or redirect_uri gets a page, the rest a redirect. */
async function parse(
  s: OauthServer,
  res: Response,
  req: Request,
  params: Record<string, unknown>,
  status: 302 | 303,
): Promise<AuthorizeRequest | null> {
  const parsed = await parseAuthorizeRequest(
    s.pool,
    s.doc,
    params,
    s.config.publicBaseUrl,
    s.metadataClients,
    req.ip ?? '',
  );
  switch (parsed.kind) {
    case 'ok':
      return parsed.request;
    case 'page':
      sendErrorPage(res, 400, 'This authorization request cannot be trusted', parsed.message);
      return null;
    case 'throttled':
      res.set('Retry-After', String(parsed.retryAfterSeconds));
      sendErrorPage(
        res,
        429,
        'Too many new apps',
        'Too many apps were looked up from your address in the last hour. Try again later.',
      );
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

type Workspaces = Awaited<ReturnType<typeof workspacesOf>>;

/** The scopes of the app's live consent in each workspace (none for a metadata-document app with no row yet). */
async function grantedScopes(s: OauthServer, appId: string | null, workspaces: Workspaces) {
  const granted = new Map<string, string[]>();
  if (appId === null) return granted;
  for (const w of workspaces) {
    const grant = await findLiveGrant(s.pool, appId, w.member_id);
    if (grant) granted.set(w.member_id, grant.scopes);
  }
  return granted;
}

function showConsent(
  s: OauthServer,
  res: Response,
  r: AuthorizeRequest,
  page: {
    csrf: string;
    email: string;
    workspaces: Workspaces;
    granted: Map<string, string[]>;
  },
): void {
  sendPage(
    res,
    200,
    `Allow ${r.app.name}?`,
    consentView({
      doc: s.doc,
      csrf: page.csrf,
      appName: r.app.name,
      verified: r.app.verified,
      // A self-registered app chose its own name: where the answer goes is what can be trusted.
      selfRegistered:
        r.app.registration === 'operator'
          ? null
          : { sendsTo: new URL(r.redirectUri).host, clientId: r.app.client_id },
      email: page.email,
      scopes: r.scopes,
      workspaces: page.workspaces.map((w) => ({
        memberId: w.member_id,
        name: w.workspace_name,
        // Allowing there replaces a wider consent: the page says what the app loses (issueCode).
        loses: (page.granted.get(w.member_id) ?? []).filter((scope) => !r.scopes.includes(scope)),
      })),
      params: formParams(r),
    }),
  );
}

/** GET {authorize_url}: signs the person in if needed, then shows the consent (or honours a remembered one). */
export function showAuthorize(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const r = await parse(s, res, req, req.query as Record<string, unknown>, 302);
    if (!r) return;
    const person = await s.sessions.current(req);
    if (!person) return showSignIn(s, req, res, r);
    const workspaces = await workspacesOf(s, person);
    const granted = await grantedScopes(s, r.app.id, workspaces);
    if (!r.forceConsent) {
      // Remembered consent: the same app, workspace and (at least) these scopes. With such consents in
      // several workspaces the person still has to say which one.
      const remembered = workspaces.filter((w) =>
        r.scopes.every((scope) => granted.get(w.member_id)?.includes(scope)),
      );
      if (remembered.length === 1) {
        const [w] = remembered;
        const member = { memberId: w!.member_id, workspaceId: w!.workspace_id };
        if (await approve(s, res, r, member, true)) return;
      }
    }
    const csrf = await s.csrf.tokenFor(req, res, person.sessionId, s.sessions.secure);
    showConsent(s, res, r, { csrf, email: person.email, workspaces, granted });
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
    const r = await parse(s, res, req, body, 303);
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
    await approve(s, res, r, { memberId: workspace.member_id, workspaceId: workspace.workspace_id }, false);
  };
}
