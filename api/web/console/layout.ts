import { html, type SafeHtml } from '../html.ts';
import type { ConsoleContext } from './context.ts';
import { csrfField } from './forms.ts';

const sections = [
  ['keys', 'API keys'],
  ['logs', 'Request log'],
  ['usage', 'Usage and spend'],
  ['webhooks', 'Webhooks'],
  ['tasks', 'Tasks'],
  ['apps', 'OAuth apps'],
] as const;

/** Every console page's frame: the workspace, its sections as plain links, and sign-out. */
export function consoleFrame(c: ConsoleContext, current: string, body: SafeHtml): SafeHtml {
  // The first Tab stop skips the navigation, for keyboard users.
  return html`<a class="skip" href="#main">Skip to content</a>
    <header>
      <p class="muted">
        ${c.person.email} in <strong>${c.member.workspace_name}</strong>
        ${
          c.members.length > 1
            ? html`· switch to
              ${c.members
                .filter((m) => m.id !== c.member.id)
                .map((m) => html`<a href="/console/${m.id}/keys">${m.workspace_name}</a> `)}`
            : ''
        }
      </p>
      <nav aria-label="Console">
        ${sections.map(([path, label]) =>
          path === current
            ? html`<a href="${c.base}/${path}" aria-current="page"><strong>${label}</strong></a>`
            : html`<a href="${c.base}/${path}">${label}</a>`,
        )}
        <a href="/account">Connected apps</a>
        <a href="/status">Status</a>
      </nav>
    </header>
    <main id="main" tabindex="-1">${body}</main>
    <form method="post" action="/account/sign-out">
      ${csrfField(c)}<button type="submit">Sign out</button>
    </form>`;
}

/** What follows a paged list: a note when it has no rows, and the link to its older rows. */
export function listEnd(count: number, empty: string, olderHref: string | null, older: string): SafeHtml {
  return html`${count === 0 ? html`<p>${empty}</p>` : ''}
  ${olderHref ? html`<p><a href="${olderHref}">${older}</a></p>` : ''}`;
}
