import type { ListedKey } from '../../../shared/db/queries/apiKeys.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, money, when } from './context.ts';
import { csrfField, formError } from './forms.ts';
import { consoleTable } from './table.ts';

/** Who a member is to the one looking: "you", else their email (a member since deleted: their id). */
function whoIs(c: ConsoleContext, memberId: string, email: string | null): SafeHtml {
  if (memberId === c.member.id) return html`you`;
  return email === null ? html`<code>${memberId}</code> (no longer a member)` : html`${email}`;
}

function keyState(c: ConsoleContext, k: ListedKey, now: number): SafeHtml {
  if (k.revoked_at) {
    // Null for keys revoked before revocations recorded who.
    if (k.revoked_by === null) return html`revoked ${when(k.revoked_at)}`;
    const by = k.revoked_by === 'operator' ? html`an operator` : whoIs(c, k.revoked_by, k.revoked_by_email);
    return html`revoked ${when(k.revoked_at)} by ${by}`;
  }
  if (k.expires_at && Date.parse(k.expires_at) <= now) return html`expired`;
  return html`active`;
}

export function keysView(
  c: ConsoleContext,
  keys: readonly ListedKey[],
  next: string | null,
  now: number,
): SafeHtml {
  const currency = c.member.currency;
  return html`<h1>API keys</h1>
    ${
      c.member.has_developer_access
        ? html`<p><a class="button primary" href="${c.base}/keys/new">Create a key</a></p>`
        : html`<p class="muted">
            You do not have developer access in this workspace: you cannot create keys.
          </p>`
    }
    ${consoleTable(
      ['Name', 'Secret', 'Mode', 'Scope', 'Projects', 'Last used', 'Spend this month', 'State', 'Actions'],
      keys,
      (k) =>
        html`<tr data-key="${k.id}">
          <td>
            ${k.name}<br /><span class="muted">created by ${whoIs(c, k.member_id, k.member_email)}</span>
          </td>
          <td><code>${k.secret_hint}</code></td>
          <td>${k.livemode ? 'live' : 'test'}</td>
          <td>
            ${k.scope_level}${k.scope_level === 'package' ? html`: ${k.scope_packages.join(', ')}` : ''}
            ${k.scope_level === 'operation' ? html`: ${k.scope_operations.join(', ')}` : ''}
          </td>
          <td>${k.projects.map((p) => p.name).join(', ')}</td>
          <td>${when(k.last_used_at)}</td>
          <td>
            ${money(k.spent_this_month_minor, currency)}
            ${k.monthly_spend_cap_minor !== null ? html` of ${money(k.monthly_spend_cap_minor, currency)}` : ' (no cap)'}
          </td>
          <td>
            ${keyState(c, k, now)}
            ${
              k.previous_secret_expires_at && Date.parse(k.previous_secret_expires_at) > now
                ? html`<br /><span class="muted"
                      >old secret works until ${when(k.previous_secret_expires_at)}</span
                    >`
                : ''
            }
          </td>
          <td>
            <div class="actions">
              ${
                // Roll only on the member's own keys (it would hand over a colleague's identity);
                // revoke on any, so a leak is stopped without waiting for the key's owner. Each
                // opens its confirmation page.
                k.revoked_at || !c.member.has_developer_access || k.member_id !== c.member.id
                  ? ''
                  : html`<a class="button" href="${c.base}/keys/${k.id}/roll">Roll ${k.name}…</a>`
              }
              ${
                k.revoked_at || !c.member.has_developer_access
                  ? ''
                  : html`<a class="button danger" href="${c.base}/keys/${k.id}/revoke">Revoke ${k.name}…</a>`
              }
            </div>
          </td>
        </tr>`,
      { empty: 'No keys yet.', olderHref: next && `${c.base}/keys?cursor=${next}`, older: 'Older keys' },
    )}`;
}

export function newKeyView(c: ConsoleContext, doc: ApiDocument, error?: string): SafeHtml {
  return html`<h1>Create an API key</h1>
    ${formError(error)}
    <form method="post" action="${c.base}/keys">
      ${csrfField(c)}
      <label for="name">Name</label><input id="name" type="text" name="name" required maxlength="200" />
      <fieldset>
        <legend>Projects</legend>
        ${c.member.projects.map(
          (p, i) =>
            html`<label
              ><input type="checkbox" name="projects" value="${p.id}" ${i === 0 ? html`checked` : ''} />
              ${p.name}</label
            >`,
        )}
      </fieldset>
      <fieldset>
        <legend>Mode</legend>
        <label><input type="radio" name="mode" value="test" checked /> Test (fixtures, free)</label>
        <label><input type="radio" name="mode" value="live" /> Live (billed)</label>
      </fieldset>
      <fieldset>
        <legend>Scope</legend>
        <label><input type="radio" name="scope_level" value="app" checked /> The whole API</label>
        <label><input type="radio" name="scope_level" value="package" /> These packages:</label>
        ${doc.packages.map(
          (p) =>
            html`<label
              ><input type="checkbox" name="packages" value="${p.id}" /> ${p.title}
              <code class="muted">${p.id}</code></label
            >`,
        )}
        <label><input type="radio" name="scope_level" value="operation" /> These operations:</label>
        ${doc.scopes.map(
          (scope) =>
            html`<label
              ><input type="checkbox" name="operations" value="${scope}" />
              ${doc.operations.find((o) => o.scope === scope)?.title ?? scope}
              <code class="muted">${scope}</code></label
            >`,
        )}
      </fieldset>
      <label for="expires_at">Expires (UTC, optional)</label
      ><input id="expires_at" type="datetime-local" name="expires_at" />
      <label for="ip_allowlist">IP allowlist (CIDRs, comma-separated; empty = anywhere)</label
      ><input id="ip_allowlist" type="text" name="ip_allowlist" />
      <label for="cap">Monthly spend cap (minor units of ${c.member.currency}; empty = none)</label
      ><input id="cap" type="number" name="monthly_spend_cap" min="0" />
      <button type="submit" class="primary">Create key</button>
    </form>`;
}
