import { createHash } from 'node:crypto';

import type { Response } from 'express';

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

const style = raw(`
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #1a1a1a; }
  h1 { font-size: 1.4rem; } .muted { color: #666; font-size: .9rem; } .error { color: #a00; }
  label { display: block; margin: .75rem 0 .25rem; } input[type=email], input[type=password] { width: 100%; padding: .4rem; }
  button { margin: 1rem .5rem 0 0; padding: .5rem 1rem; } ul { padding-left: 1.2rem; } code { font-size: .85rem; }
  fieldset { border: 1px solid #ccc; margin: 1rem 0; } .app { border-top: 1px solid #ddd; padding: .75rem 0; }
  body.wide { max-width: 72rem; } table { border-collapse: collapse; width: 100%; font-size: .9rem; }
  th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
  nav a { margin-right: 1rem; } a:focus, button:focus, input:focus, select:focus { outline: 3px solid #36c; }
  input[type=text], input[type=number], input[type=datetime-local], select { padding: .3rem; }
  .secret { font: 1rem monospace; background: #ffd; padding: .5rem; word-break: break-all; }
  pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; font-size: .8rem; white-space: pre-wrap; }
  .bars { display: flex; align-items: flex-end; gap: 1px; height: 3rem; } .bars span { flex: 1; min-width: 2px; }
  .up { background: #2a2; } .partial { background: #da2; } .down { background: #c22; } .none { background: #ccc; }
  .chart { display: flex; align-items: stretch; gap: 1px; height: 10rem; border-bottom: 1px solid #999; }
  .chart .day { flex: 1; display: flex; flex-direction: column-reverse; } .chart a { display: block; min-height: 1px; }
  .legend { list-style: none; padding: 0; } .legend li { display: inline-block; margin-right: 1rem; }
  .skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: #fff; padding: .5rem; }
  form.inline { display: inline; } form.inline button { margin: 0; padding: .2rem .5rem; }
`);

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

/** A secret shown once, read-only, with its copy button (needs `copy: true` on the page). */
export const secretField = (label: string, secret: string) =>
  html`<p>
    <label for="secret">${label}</label
    ><input id="secret" class="secret" type="text" readonly value="${secret}" size="60" />${copyButton('secret')}
  </p>`;

/**
 * Sends a whole page: no script, no third-party resource, never cached, never framed (a consent
 * page inside another site's frame would invite clickjacking).
 */
export function sendPage(
  res: Response,
  status: number,
  title: string,
  body: SafeHtml,
  options: { wide?: boolean; media?: boolean; copy?: boolean } = {},
): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      // Media from this origin only where a page plays it (the console's media board).
      'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline';${options.media ? " media-src 'self';" : ''}${options.copy ? ` script-src ${copyScriptHash};` : ''} frame-ancestors 'none'; base-uri 'none'`,
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
            <style>
              ${style}
            </style>
          </head>
          <body class="${options.wide ? 'wide' : ''}">
            ${body} ${options.copy ? copyScriptTag : ''}
          </body>
        </html> `.text,
    );
}

/** A page that only explains a problem (no redirect anywhere). */
export function sendErrorPage(res: Response, status: number, title: string, message: string): void {
  sendPage(
    res,
    status,
    title,
    html`<h1>${title}</h1>
      <p class="error">${message}</p>`,
  );
}
