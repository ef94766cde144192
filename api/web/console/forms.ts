import { html, type SafeHtml } from '../html.ts';
import type { ConsoleContext } from './context.ts';

/** The hidden field that carries the session's CSRF token in every console form. */
export const csrfField = (c: ConsoleContext): SafeHtml =>
  html`<input type="hidden" name="_csrf" value="${c.csrf}" />`;

/** Why the form above was refused, announced to screen readers; nothing when it was not. */
export const formError = (error: string | undefined): SafeHtml => {
  if (!error) return html``;
  return html`<p class="alert" role="alert">${sentence(error)}</p>`;
};

/**
 * A refused form's problems, each by the id of the field it is about (for a group of checkboxes or
 * radios, the id of its first choice): the summary links there, and the field's message is `${id}-error`.
 */
export type FieldErrors = Readonly<Record<string, string>>;

/**
 * GOV.UK's error summary, at the top of a refused form: every problem as a link to its field, read
 * out at once (role="alert"). Nothing when there is none.
 */
export function errorSummary(errors: FieldErrors): SafeHtml {
  const problems = Object.entries(errors);
  if (problems.length === 0) return html``;
  return html`<div class="error-summary" role="alert" aria-labelledby="error-summary-title">
    <h2 id="error-summary-title">There is a problem</h2>
    <ul>
      ${problems.map(([id, message]) => html`<li><a href="#${id}">${message}</a></li>`)}
    </ul>
  </div>`;
}

/** The problem of field `id`, between its label and the field as GOV.UK places it; nothing when it has none. */
export function fieldError(errors: FieldErrors, id: string): SafeHtml {
  const message = errors[id];
  if (message === undefined) return html``;
  return html`<p class="field-error" id="${id}-error"><span class="sr-only">Error:</span> ${message}</p>`;
}

/**
 * Inside a field's tag: its hint (`hintId`, optional) and, when `id` has a problem, its message as
 * what describes it, and aria-invalid.
 */
export function fieldAttrs(errors: FieldErrors, id: string, hintId?: string): SafeHtml {
  const invalid = errors[id] !== undefined;
  const described = [hintId, invalid ? `${id}-error` : undefined].filter(Boolean).join(' ');
  return html`${invalid ? html`aria-invalid="true"` : ''}
  ${described ? html`aria-describedby="${described}"` : ''}`;
}

/**
 * Inside a fieldset's tag: ties the group to the message of its first choice `id` (a group takes no
 * aria-invalid; its message is read with its legend).
 */
export const groupAttrs = (errors: FieldErrors, id: string): SafeHtml =>
  errors[id] === undefined ? html`` : html`aria-describedby="${id}-error"`;

/** `checked` on a choice that is chosen (a refused form shows its choices again). */
export const checkedIf = (chosen: boolean): SafeHtml => (chosen ? html`checked` : html``);

/** A domain message ("the URL must…", a clause) as a sentence. */
export const sentence = (message: string): string =>
  `${message.charAt(0).toUpperCase()}${message.slice(1)}${/[.!?]$/.test(message) ? '' : '.'}`;

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
