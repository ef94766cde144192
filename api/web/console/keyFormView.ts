import { currencyDecimals } from '../../../shared/billing/majorUnits.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { html, type SafeHtml } from '../html.ts';
import type { ConsoleContext } from './context.ts';
import {
  checkedIf,
  csrfField,
  errorSummary,
  fieldAttrs,
  fieldError,
  type FieldErrors,
  groupAttrs,
} from './forms.ts';

/** What the key form holds: a new form's defaults, or what a refused form sent, as it was typed. */
export type KeyFormValues = {
  name: string;
  projects: readonly string[];
  mode: 'test' | 'live';
  scopeLevel: 'app' | 'package' | 'operation';
  packages: readonly string[];
  operations: readonly string[];
  expiresAt: string;
  ipAllowlist: string;
  /** In the currency's major unit ("50.00"), as typed. */
  cap: string;
};

/** A new key's form: the first project, test mode, the whole API, no limit. */
export const blankKeyForm = (c: ConsoleContext): KeyFormValues => ({
  name: '',
  projects: c.member.projects.slice(0, 1).map((p) => p.id),
  mode: 'test',
  scopeLevel: 'app',
  packages: [],
  operations: [],
  expiresAt: '',
  ipAllowlist: '',
  cap: '',
});

// The ids the error summary links to: a field's, or a group's first choice.
export const keyFieldIds = {
  name: 'name',
  projects: 'projects',
  packages: 'packages',
  operations: 'operations',
  expiresAt: 'expires_at',
  ipAllowlist: 'ip_allowlist',
  cap: 'cap',
} as const;

/** Checkboxes for `options`, those in `chosen` ticked; the first has the group's id. */
function checkboxes(
  name: string,
  options: readonly { value: string; label: string; code?: string }[],
  chosen: readonly string[],
): SafeHtml[] {
  return options.map(
    (o, i) =>
      html`<label class="choice"
        ><input
          type="checkbox"
          name="${name}"
          value="${o.value}"
          ${i === 0 ? html`id="${name}"` : ''}
          ${checkedIf(chosen.includes(o.value))}
        />
        ${o.label} ${o.code ? html`<code class="muted">${o.code}</code>` : ''}</label
      >`,
  );
}

/**
 * The scope: the whole API, some packages, or some operations. A level's checkboxes follow its radio
 * and show only while it is chosen (the stylesheet's :has(), no script); without :has() all show.
 */
function scopeFieldset(doc: ApiDocument, v: KeyFormValues, errors: FieldErrors): SafeHtml {
  const level = (value: KeyFormValues['scopeLevel'], label: string) =>
    html`<label class="choice"
      ><input
        type="radio"
        name="scope_level"
        value="${value}"
        id="scope-${value}"
        ${checkedIf(v.scopeLevel === value)}
      />
      ${label}</label
    >`;
  const packages = doc.packages.map((p) => ({ value: p.id, label: p.title, code: p.id }));
  const operations = doc.scopes.map((scope) => ({
    value: scope,
    label: doc.operations.find((o) => o.scope === scope)?.title ?? scope,
    code: scope,
  }));
  return html`<fieldset class="scope">
    <legend>What the key may call</legend>
    ${level('app', 'The whole API')} ${level('package', 'Some packages')}
    <fieldset class="scope-choices" data-level="package" ${groupAttrs(errors, keyFieldIds.packages)}>
      <legend>Packages (${packages.length})</legend>
      ${fieldError(errors, keyFieldIds.packages)} ${checkboxes('packages', packages, v.packages)}
    </fieldset>
    ${level('operation', 'Some operations (finer)')}
    <fieldset class="scope-choices" data-level="operation" ${groupAttrs(errors, keyFieldIds.operations)}>
      <legend>Operations (${operations.length})</legend>
      ${fieldError(errors, keyFieldIds.operations)} ${checkboxes('operations', operations, v.operations)}
    </fieldset>
  </fieldset>`;
}

/** The spend cap, typed in the workspace currency's major unit with the currency beside it. */
function capField(currency: string, v: KeyFormValues, errors: FieldErrors): SafeHtml {
  const decimals = currencyDecimals(currency);
  const example = decimals === 0 ? '50' : `50 or 50.${'0'.repeat(decimals)}`;
  return html`<label for="cap">Monthly spend cap in ${currency} (optional)</label>
    <p class="hint" id="cap-hint">For example ${example}. Empty: no cap.</p>
    ${fieldError(errors, keyFieldIds.cap)}
    <div class="amount">
      <input
        id="cap"
        type="text"
        inputmode="decimal"
        autocomplete="off"
        spellcheck="false"
        name="monthly_spend_cap"
        value="${v.cap}"
        ${fieldAttrs(errors, keyFieldIds.cap, 'cap-hint')}
      /><span class="amount-currency" aria-hidden="true">${currency}</span>
    </div>`;
}

/** The form that creates a key; a refused one comes back with what was typed and each problem at its field. */
export function newKeyView(
  c: ConsoleContext,
  doc: ApiDocument,
  v: KeyFormValues = blankKeyForm(c),
  errors: FieldErrors = {},
): SafeHtml {
  return html`<h1>Create an API key</h1>
    ${errorSummary(errors)}
    <form method="post" action="${c.base}/keys" novalidate>
      ${csrfField(c)}
      <label for="name">Name</label>
      ${fieldError(errors, keyFieldIds.name)}
      <input
        id="name"
        type="text"
        name="name"
        maxlength="200"
        value="${v.name}"
        ${fieldAttrs(errors, 'name')}
      />
      <fieldset ${groupAttrs(errors, keyFieldIds.projects)}>
        <legend>Projects</legend>
        ${fieldError(errors, keyFieldIds.projects)}
        ${checkboxes(
          'projects',
          c.member.projects.map((p) => ({ value: p.id, label: p.name })),
          v.projects,
        )}
      </fieldset>
      <fieldset>
        <legend>Mode</legend>
        <label class="choice"
          ><input type="radio" name="mode" value="test" ${checkedIf(v.mode === 'test')} /> Test (fixtures,
          free)</label
        >
        <label class="choice"
          ><input type="radio" name="mode" value="live" ${checkedIf(v.mode === 'live')} /> Live
          (billed)</label
        >
      </fieldset>
      ${scopeFieldset(doc, v, errors)}
      <label for="expires_at">Expires (UTC, optional)</label>
      ${fieldError(errors, keyFieldIds.expiresAt)}
      <input
        id="expires_at"
        type="datetime-local"
        name="expires_at"
        value="${v.expiresAt}"
        ${fieldAttrs(errors, keyFieldIds.expiresAt)}
      />
      <label for="ip_allowlist">IP allowlist (optional)</label>
      <p class="hint" id="ip_allowlist-hint">CIDRs, comma-separated, like 203.0.113.0/24. Empty: anywhere.</p>
      ${fieldError(errors, keyFieldIds.ipAllowlist)}
      <input
        id="ip_allowlist"
        type="text"
        name="ip_allowlist"
        autocomplete="off"
        spellcheck="false"
        value="${v.ipAllowlist}"
        ${fieldAttrs(errors, keyFieldIds.ipAllowlist, 'ip_allowlist-hint')}
      />
      ${capField(c.member.currency, v, errors)}
      <button type="submit" class="primary">Create key</button>
    </form>`;
}
