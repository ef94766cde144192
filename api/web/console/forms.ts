import { html, type SafeHtml } from '../html.ts';
import type { ConsoleContext } from './context.ts';

/** The hidden field that carries the session's CSRF token in every console form. */
export const csrfField = (c: ConsoleContext): SafeHtml =>
  html`<input type="hidden" name="_csrf" value="${c.csrf}" />`;

/** Why the form above was refused, announced to screen readers; nothing when it was not. */
export const formError = (error: string | undefined): SafeHtml => {
  if (!error) return html``;
  // Domain messages are clauses ("the URL must…"): a sentence here.
  const sentence = `${error.charAt(0).toUpperCase()}${error.slice(1)}${/[.!?]$/.test(error) ? '' : '.'}`;
  return html`<p class="alert" role="alert">${sentence}</p>`;
};

/** A choice of one of the member's projects, as the forms that create something in a project ask. */
export function projectSelect(c: ConsoleContext, id: string, selected = ''): SafeHtml {
  return html`<label for="${id}">Project</label>
    <select id="${id}" name="project">
      ${c.member.projects.map(
        (p) => html`<option value="${p.id}" ${p.id === selected ? html`selected` : ''}>${p.name}</option>`,
      )}
    </select>`;
}

/** A creating form's words: its heading, what it is for (said to those who may not), its button. */
export type FormText = { heading: string; purpose: string; submit: string };

/**
 * A page's creating form (posted to `action`) under its heading, for members with developer access;
 * the others see a line saying what they would need it for (the handlers refuse them anyway).
 */
export function developerForm(
  c: ConsoleContext,
  action: string,
  text: FormText,
  fields: SafeHtml,
  error?: string,
): SafeHtml {
  return c.member.has_developer_access
    ? html`<h2>${text.heading}</h2>
        ${formError(error)}
        <form method="post" action="${action}">
          ${csrfField(c)} ${fields}
          <button type="submit" class="primary">${text.submit}</button>
        </form>`
    : html`<p class="muted">You need developer access to ${text.purpose}.</p>`;
}
