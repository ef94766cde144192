import { createHash } from 'node:crypto';

import type { Response } from 'express';

import { stylesheetHref } from './assets.ts';
import { productName } from './brand.ts';

/** Markup that is already safe: only `html` and `raw` make it. */
export class SafeHtml {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

const entities: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => entities[c]!);

/** For constant markup written in this codebase only, never for anything a person or app supplied. */
export const raw = (text: string) => new SafeHtml(text);

type Part = SafeHtml | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof SafeHtml) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/** A template whose every interpolation is escaped unless it is SafeHtml: app names, emails, scopes, URLs. */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

// The only script any page runs: a copy button for a secret shown once. It ships hidden, so without
// JavaScript there is no dead button (the secret's field is readonly and selectable). Allowed by its
// hash alone, so an injected script still could not run.
const copyScript = raw(
  "for (const b of document.querySelectorAll('button[data-copy]')) { b.hidden = false; b.addEventListener('click', () => { const f = document.getElementById(b.dataset.copy); f.select(); navigator.clipboard.writeText(f.value).then(() => { b.textContent = 'Copied'; }, () => { b.textContent = 'Press Ctrl+C'; }); }); }",
);
// Built outside any template Prettier formats: the hash covers the script's exact text.
const copyScriptTag = raw(`<script>${copyScript.text}</script>`);
const copyScriptHash = `'sha256-${createHash('sha256').update(copyScript.text).digest('base64')}'`;

/** A copy button for the field `fieldId` (needs `copy: true` on the page). */
export const copyButton = (fieldId: string) =>
  html`<button type="button" data-copy="${fieldId}" hidden>Copy</button>`;

/** How a page is laid out: `framed` pages bring their own top bar (the console's frame). */
export type PageOptions = { wide?: boolean; framed?: boolean; media?: boolean; copy?: boolean };

/** The top bar of a page outside the console: the product's name, leading to the console. */
export const brandBar = (extra: SafeHtml | '' = '') =>
  html`<header class="topbar"><a class="brand" href="/console">${productName}</a>${extra}</header>`;

function shell(body: SafeHtml, options: PageOptions): SafeHtml {
  if (options.framed) return body;
  return html`<a class="skip" href="#main">Skip to content</a>${brandBar()}
    <main id="main" tabindex="-1" class="shell${options.wide ? '' : ' narrow'}">${body}</main>`;
}

/**
 * Sends a whole page: styles from this origin only (the one stylesheet), no script but the copy
 * button's, no third-party resource, never cached, never framed (a consent page inside another
 * site's frame would invite clickjacking).
 */
export function sendPage(
  res: Response,
  status: number,
  title: string,
  body: SafeHtml,
  options: PageOptions = {},
): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      // Media from this origin only where a page plays it (the console's media board).
      'Content-Security-Policy': `default-src 'none'; style-src 'self';${options.media ? " media-src 'self';" : ''}${options.copy ? ` script-src ${copyScriptHash};` : ''} frame-ancestors 'none'; base-uri 'none'`,
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'X-Content-Type-Options': 'nosniff',
    })
    .send(
      html`<!doctype html>
        <html lang="en">
          <head>
            <meta charset="utf-8" />
            <meta name="viewport" content="width=device-width, initial-scale=1" />
            <title>${title}</title>
            <link rel="stylesheet" href="${stylesheetHref}" />
          </head>
          <body>
            ${shell(body, options)} ${options.copy ? copyScriptTag : ''}
          </body>
        </html> `.text,
    );
}

/** A page that only explains a problem, with a way back to the console. */
export function sendErrorPage(res: Response, status: number, title: string, message: string): void {
  sendPage(
    res,
    status,
    title,
    html`<h1>${title}</h1>
      <p class="alert" role="alert">${message}</p>
      <p><a href="/console">Go to the console</a> · <a href="/status">Service status</a></p>`,
  );
}
