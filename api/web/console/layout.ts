import type { Response } from 'express';

import { productName } from '../brand.ts';
import { html, type PageOptions, type SafeHtml, sendPage } from '../html.ts';
import type { ConsoleContext } from './consoleContextType.ts';

const sections = [
  ['keys', 'API keys'],
  ['logs', 'Request log'],
  ['usage', 'Usage and spend'],
  ['webhooks', 'Webhooks'],
  ['tasks', 'Tasks'],
  ['apps', 'OAuth apps'],
] as const;

/** Who the frame is for: a whole console context, or a person whose workspace is not known yet. */
type FrameFor = Pick<ConsoleContext, 'person' | 'csrf'> &
  Partial<Pick<ConsoleContext, 'member' | 'members' | 'base'>>;

function workspaceLine(c: FrameFor): SafeHtml {
  const others = (c.members ?? []).filter((m) => m.id !== c.member?.id);
  return html`<p class="who">
    ${c.person.email}${c.member ? html` in <strong>${c.member.workspace_name}</strong>` : ''}
    ${others.length > 0 ? html`· switch to ${others.map((m) => html`<a href="/console/${m.id}/keys">${m.workspace_name}</a> `)}` : ''}
  </p>`;
}

/**
 * Every console page's frame: the product's name, the workspace, its sections (a menu that opens
 * on a phone) and sign-out. The first Tab stop skips the navigation, for keyboard users.
 */
export function consoleFrame(c: FrameFor, current: string, body: SafeHtml, notice?: string): SafeHtml {
  const base = c.base ?? '/console';
  return html`<a class="skip" href="#main">Skip to content</a>
    <header class="topbar">
      <a class="brand" href="${base}">${productName}</a>
      ${workspaceLine(c)}
      <details class="menu">
        <summary>Menu</summary>
        <nav aria-label="Console">
          <ul>
            ${sections.map(([path, label]) =>
              path === current
                ? html`<li><a href="${base}/${path}" aria-current="page">${label}</a></li>`
                : html`<li><a href="${base}/${path}">${label}</a></li>`,
            )}
            <li>
              <a href="/account" ${current === 'account' ? html`aria-current="page"` : ''}>Connected apps</a>
            </li>
            <li><a href="/status">Status</a></li>
          </ul>
        </nav>
      </details>
      <form class="signout" method="post" action="/account/sign-out">
        ${c.csrf ? html`<input type="hidden" name="_csrf" value="${c.csrf}" />` : ''}<button type="submit">
          Sign out
        </button>
      </form>
    </header>
    <main id="main" tabindex="-1" class="shell">
      ${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}${body}
    </main>`;
}

/** Sends a console page inside its frame; `notice` says what the last action did. */
export function sendConsolePage(
  res: Response,
  status: number,
  title: string,
  c: ConsoleContext,
  current: string,
  body: SafeHtml,
  options: Omit<PageOptions, 'framed'> & { notice?: string } = {},
): void {
  sendPage(res, status, title, consoleFrame(c, current, body, options.notice ?? c.notice), {
    ...options,
    framed: true,
  });
}

/** A console error page: the frame and its navigation around the problem, never a dead end. */
export function sendConsoleError(
  res: Response,
  c: FrameFor,
  status: number,
  title: string,
  message: string,
): void {
  const body = html`<h1>${title}</h1>
    <p class="alert" role="alert">${message}</p>
    <p><a href="${c.base ?? '/console'}">Back to the console</a></p>`;
  sendPage(res, status, title, consoleFrame(c, '', body), { framed: true });
}
