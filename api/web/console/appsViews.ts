import type { listWorkspaceOauthApps } from '../../../shared/db/queries/oauthApps.ts';
import { identityScopes } from '../../../shared/oauth/registration.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { html, type SafeHtml } from '../html.ts';
import { describeScope, scopeList } from '../pages/views.ts';
import type { ConsoleContext } from './context.ts';
import { developerForm, projectSelect } from './forms.ts';
import type { Reveal } from './reveals.ts';
import { consoleTable } from './table.ts';

type ListedApp = Awaited<ReturnType<typeof listWorkspaceOauthApps>>[number];

const appForm = { heading: 'Register an app', purpose: 'register apps', submit: 'Register app' };

function appFields(c: ConsoleContext, doc: ApiDocument): SafeHtml {
  return html`<label for="app-name">Name (shown on the consent page)</label
    ><input id="app-name" type="text" name="name" required maxlength="200" />
    ${projectSelect(c, 'app-project')}
    <fieldset>
      <legend>Type</legend>
      <label
        ><input type="radio" name="type" value="server" checked /> Server (confidential, gets a secret)</label
      >
      <label><input type="radio" name="type" value="public" /> Public (browser or native, PKCE only)</label>
    </fieldset>
    <label for="app-redirects">Redirect URIs (one per line)</label>
    <textarea id="app-redirects" name="redirect_uris" rows="3" cols="60" required></textarea>
    <fieldset>
      <legend>Scopes</legend>
      ${[...identityScopes, ...doc.scopes].map(
        (scope) =>
          html`<label class="choice"
            ><input type="checkbox" name="scopes" value="${scope}" /> ${describeScope(doc, scope).words}
            ${describeScope(doc, scope).sensitive ? html`<strong>(sensitive)</strong>` : ''}
            <code class="muted">${scope}</code></label
          >`,
      )}
    </fieldset>`;
}

export function appsView(
  c: ConsoleContext,
  doc: ApiDocument,
  apps: readonly ListedApp[],
  next: string | null,
  error?: string,
): SafeHtml {
  return html`<h1>OAuth apps</h1>
    <p>Apps you have connected to your account are on <a href="/account">your account page</a>.</p>
    ${consoleTable(
      ['Name', 'Client id', 'Type', 'Project', 'Redirect URIs', 'Scopes', 'Verification'],
      apps,
      (a) =>
        html`<tr data-app="${a.id}">
          <td>${a.name}</td>
          <td><code>${a.client_id}</code></td>
          <td>${a.type}</td>
          <td>${a.project_name}</td>
          <td>${a.redirect_uris.map((u) => html`<code>${u}</code><br />`)}</td>
          <td>${scopeList(doc, a.scopes)}</td>
          <td>
            ${a.verified ? 'verified' : 'not verified (sensitive scopes need an operator to verify it)'}
          </td>
        </tr>`,
      {
        empty: 'No apps registered.',
        olderHref: next && `${c.base}/apps?cursor=${next}`,
        older: 'Older apps',
      },
    )}
    ${developerForm(c, `${c.base}/apps`, appForm, appFields(c, doc), error)}`;
}

/** The client's credentials, shown once after registration (a public app has no secret). */
export function appReveal(
  c: ConsoleContext,
  name: string,
  clientId: string,
  clientSecret: string | null,
): Reveal {
  return {
    title: 'App registered',
    heading: `${name} is registered`,
    note: clientSecret
      ? 'Keep the client secret on your server.'
      : 'A public app has no secret: it proves itself with PKCE. Note the client id.',
    fields: [
      { label: 'Client id', value: clientId, secret: false },
      ...(clientSecret ? [{ label: 'Client secret', value: clientSecret, secret: true }] : []),
    ],
    back: { href: `${c.base}/apps`, label: 'Back to apps' },
  };
}
