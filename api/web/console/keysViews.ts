import type { ListedKey } from '../../../shared/db/queries/apiKeys.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, money, when } from './context.ts';
import { consoleTable } from './table.ts';

/** Who a member is to the one looking: "you", else their email (a member since deleted: their id). */
function whoIs(c: ConsoleContext, memberId: string, email: string | null): SafeHtml {
  if (memberId === c.member.id) return html`you`;
  return email === null ? html`<code>${memberId}</code> (no longer a member)` : html`${email}`;
}

/** A short word in a coloured pill; the word says it all, the colour only repeats it. */
type Tone = 'success' | 'warning' | 'danger' | 'neutral';
export const badge = (tone: Tone, word: string): SafeHtml => html`<span class="badge ${tone}">${word}</span>`;

// A key that stops working within this is "expiring": time to mint its successor.
const expiringWithinMs = 7 * 24 * 3600_000;

/**
 * Where a key stands, always true: a revoked key is only revoked (when, by whom), whatever a roll
 * left (its old secret answers 401 too); otherwise expired, or active with what is coming: the old
 * secret's last minute after a roll, the expiry.
 */
function keyState(c: ConsoleContext, k: ListedKey, now: number): SafeHtml {
  if (k.revoked_at) {
    // Null for keys revoked before revocations recorded who.
    if (k.revoked_by === null) return html`<div>${badge('danger', 'revoked')} ${when(k.revoked_at)}</div>`;
    const by = k.revoked_by === 'operator' ? html`an operator` : whoIs(c, k.revoked_by, k.revoked_by_email);
    return html`<div>${badge('danger', 'revoked')} ${when(k.revoked_at)} by ${by}</div>`;
  }
  const expiresAt = k.expires_at ? Date.parse(k.expires_at) : Infinity;
  if (expiresAt <= now) return html`<div>${badge('danger', 'expired')} ${when(k.expires_at)}</div>`;
  const rolling = k.previous_secret_expires_at !== null && Date.parse(k.previous_secret_expires_at) > now;
  const expiring = expiresAt - now <= expiringWithinMs;
  return html`<div>
    ${badge('success', 'active')} ${rolling ? badge('warning', 'rolling') : ''}
    ${expiring ? badge('warning', 'expiring') : ''}
    ${rolling ? html`<div class="muted">old secret works until ${when(k.previous_secret_expires_at)}</div>` : ''}
    ${k.expires_at ? html`<div class="muted">expires ${when(k.expires_at)}</div>` : ''}
  </div>`;
}

const modeBadge = (k: ListedKey) => (k.livemode ? badge('neutral', 'live') : badge('warning', 'test'));

const nameCell = (c: ConsoleContext, k: ListedKey) =>
  html`<td>
    <div>${k.name}<br /><span class="muted">created by ${whoIs(c, k.member_id, k.member_email)}</span></div>
  </td>`;

/** What a key may call: the whole API, or its packages or operations. */
function scopeText(k: ListedKey): string {
  if (k.scope_level === 'package') return `packages: ${k.scope_packages.join(', ')}`;
  if (k.scope_level === 'operation') return `operations: ${k.scope_operations.join(', ')}`;
  return 'the whole API';
}

/**
 * A working key's row. Roll only on the member's own keys (it would hand over a colleague's
 * identity); revoke on any, so a leak is stopped without waiting for the key's owner. Both are
 * quiet links to their confirmation pages, not a red button on every row.
 */
function liveKeyRow(c: ConsoleContext, k: ListedKey, now: number): SafeHtml {
  const currency = c.member.currency;
  const developer = c.member.has_developer_access;
  return html`<tr data-key="${k.id}">
    ${nameCell(c, k)}
    <td><code>${k.secret_hint}</code></td>
    <td><div>${modeBadge(k)}</div></td>
    <td>${scopeText(k)}</td>
    <td>${k.projects.map((p) => p.name).join(', ')}</td>
    <td>${when(k.last_used_at)}</td>
    <td>
      ${money(k.spent_this_month_minor, currency)}
      ${k.monthly_spend_cap_minor !== null ? html` of ${money(k.monthly_spend_cap_minor, currency)}` : ' (no cap)'}
    </td>
    <td>${keyState(c, k, now)}</td>
    <td>
      <div class="actions row-actions">
        ${
          developer && k.member_id === c.member.id
            ? html`<a href="${c.base}/keys/${k.id}/roll" aria-label="Roll ${k.name}…">Roll…</a>`
            : ''
        }
        ${
          developer
            ? html`<a class="danger-link" href="${c.base}/keys/${k.id}/revoke" aria-label="Revoke ${k.name}…"
                >Revoke…</a
              >`
            : ''
        }
      </div>
    </td>
  </tr>`;
}

/** A revoked key's row: what it was, and that it is revoked, when and by whom; nothing to do with it. */
const revokedKeyRow = (c: ConsoleContext, k: ListedKey, now: number): SafeHtml =>
  html`<tr data-key="${k.id}">
    ${nameCell(c, k)}
    <td><code>${k.secret_hint}</code></td>
    <td><div>${modeBadge(k)}</div></td>
    <td>${k.projects.map((p) => p.name).join(', ')}</td>
    <td>${when(k.last_used_at)}</td>
    <td>${keyState(c, k, now)}</td>
  </tr>`;

/** A page of each: the working keys, and apart below them the revoked ones, each list paged on its own. */
export type KeyLists = {
  live: { items: readonly ListedKey[]; next: string | null };
  revoked: { items: readonly ListedKey[]; next: string | null };
};

export function keysView(c: ConsoleContext, keys: KeyLists, now: number): SafeHtml {
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
      keys.live.items,
      (k) => liveKeyRow(c, k, now),
      {
        empty: c.member.has_developer_access
          ? 'No working keys: create one to call the API.'
          : 'No working keys: a member with developer access can create one.',
        olderHref: keys.live.next && `${c.base}/keys?cursor=${keys.live.next}`,
        older: 'Older keys',
      },
    )}
    ${
      keys.revoked.items.length > 0
        ? html`<h2 id="revoked">Revoked keys</h2>
            <p class="muted">
              These keys answer 401 with every secret they ever had. A revoked key never works again.
            </p>`
        : ''
    }
    ${consoleTable(
      ['Name', 'Secret', 'Mode', 'Projects', 'Last used', 'State'],
      keys.revoked.items,
      (k) => revokedKeyRow(c, k, now),
      {
        empty: '',
        olderHref: keys.revoked.next && `${c.base}/keys?revoked_cursor=${keys.revoked.next}#revoked`,
        older: 'Older revoked keys',
      },
    )}`;
}
