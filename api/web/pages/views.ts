import type { ConnectedApp } from '../../../shared/db/queries/oauthGrants.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { html, type SafeHtml } from '../html.ts';

const identityWords: Record<string, string> = {
  openid: 'Know who you are',
  profile: 'See your basic profile',
  email: 'See your email address',
  offline_access: 'Keep access while you are away (until you cut it off)',
};

/** A scope in plain words: the catalogue's title for operations, fixed words for identity scopes. */
export function describeScope(doc: ApiDocument, scope: string): { words: string; sensitive: boolean } {
  const op = doc.operations.find((o) => o.scope === scope);
  if (op) return { words: op.title, sensitive: op.sensitive };
  return { words: identityWords[scope] ?? scope, sensitive: false };
}

export function scopeList(doc: ApiDocument, scopes: string[]): SafeHtml {
  return html`<ul>
    ${scopes.map((scope) => {
      const { words, sensitive } = describeScope(doc, scope);
      return html`<li>
        ${words}${sensitive ? html` <strong>(sensitive)</strong>` : ''} <code class="muted">${scope}</code>
      </li>`;
    })}
  </ul>`;
}

export function signInView(input: {
  csrf: string;
  returnTo: string;
  email?: string;
  error?: string;
  context?: string;
}): SafeHtml {
  return html`<h1>Sign in</h1>
    ${input.context ? html`<p>${input.context}</p>` : ''}
    ${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
    <form method="post" action="/account/sign-in">
      <input type="hidden" name="_csrf" value="${input.csrf}" />
      <input type="hidden" name="return_to" value="${input.returnTo}" />
      <label for="email">Email</label
      ><input
        id="email"
        type="email"
        name="email"
        autocomplete="username"
        required
        value="${input.email ?? ''}"
      />
      <label for="password">Password</label
      ><input id="password" type="password" name="password" autocomplete="current-password" required />
      <button type="submit" class="primary">Sign in</button>
    </form>`;
}

export function consentView(input: {
  doc: ApiDocument;
  csrf: string;
  appName: string;
  verified: boolean;
  /** For an app that registered itself (RFC 7591 or a metadata document): where the code goes, and its id. */
  selfRegistered: { sendsTo: string; clientId: string } | null;
  email: string;
  scopes: string[];
  /** `loses`: scopes the app's consent in that workspace holds and this request does not. */
  workspaces: { memberId: string; name: string; loses: string[] }[];
  /** The authorization request, repeated in hidden fields (checked again on POST). */
  params: Record<string, string>;
}): SafeHtml {
  const hidden = Object.entries(input.params).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
  );
  return html`<h1>Allow ${input.appName} to act for you?</h1>
    <p class="muted">Signed in as ${input.email}.</p>
    ${
      input.verified
        ? html`<p class="notice">This app is verified: an operator checked who publishes it.</p>`
        : html`<p class="warning" role="note">
            This app is not verified: nobody has checked who publishes it. Allow it only if you trust where
            you found it.
          </p>`
    }
    ${
      input.selfRegistered
        ? html`<p class="muted">
            It registered itself (client ${input.selfRegistered.clientId}); your answer goes to
            ${input.selfRegistered.sendsTo}.
          </p>`
        : ''
    }
    <form method="post" action="/oauth/authorize">
      <input type="hidden" name="_csrf" value="${input.csrf}" />
      ${hidden}
      <p>If you allow it, ${input.appName} will be able to:</p>
      ${scopeList(input.doc, input.scopes)}
      <fieldset>
        <legend>In which workspace?</legend>
        ${input.workspaces.map(
          (w, i) =>
            html`<label
                ><input type="radio" name="member" value="${w.memberId}" ${i === 0 ? html`checked` : ''} />
                ${w.name}</label
              >${
                w.loses.length > 0
                  ? html`<p class="muted">
                      In ${w.name}, allowing replaces the access you gave it before: it can no longer
                      ${w.loses.map((scope) => describeScope(input.doc, scope).words.toLowerCase()).join('; ')},
                      and the access it holds there now ends.
                    </p>`
                  : ''
              }`,
        )}
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary" name="decision" value="approve">Allow</button>
        <button type="submit" name="decision" value="refuse">Refuse</button>
      </div>
    </form>
    <form method="post" action="/account/sign-out">
      <input type="hidden" name="_csrf" value="${input.csrf}" /><button type="submit">
        Not you? Sign out
      </button>
    </form>`;
}

/** The account page's body; the console's frame around it has the notice and sign-out. */
export function accountView(input: {
  doc: ApiDocument;
  email: string;
  apps: readonly ConnectedApp[];
}): SafeHtml {
  const byWorkspace = new Map<string, ConnectedApp[]>();
  for (const app of input.apps) {
    byWorkspace.set(app.workspace_id, [...(byWorkspace.get(app.workspace_id) ?? []), app]);
  }
  return html`<h1>Your account</h1>
    <p class="muted">Signed in as ${input.email}.</p>
    <p><a href="/console">Back to the console</a></p>
    <h2>Connected apps</h2>
    ${input.apps.length === 0 ? html`<p>No app is connected.</p>` : ''}
    ${[...byWorkspace.values()].map(
      (apps) =>
        html`<section>
          <h3>${apps[0]!.workspace_name}</h3>
          ${apps.map(
            (app) =>
              html`<div class="app" data-grant="${app.grant_id}">
                <strong>${app.app_name}</strong>${app.verified ? ' (verified)' : ''}
                ${scopeList(input.doc, app.scopes)}
                <p class="muted">
                  Connected ${app.created_at.slice(0, 10)}; last used
                  ${app.last_used_at ? app.last_used_at.replace('T', ' ').slice(0, 16) + ' UTC' : 'never'}.
                </p>
                <p>
                  <a class="button danger" href="/account/apps/${app.grant_id}/revoke"
                    >Cut off ${app.app_name}…</a
                  >
                </p>
              </div>`,
          )}
        </section>`,
    )}`;
}
