import {
  type listEndpointDeliveryLog,
  type listWorkspaceEndpoints,
  webhookTestEventType,
} from '../../../shared/db/queries/webhooks.ts';
import { webhookEventTypes } from '../../../shared/webhooks/fanout.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, type TypedForm, when } from './context.ts';
import { csrfField, developerForm, projectSelect } from './forms.ts';
import type { Reveal } from './reveals.ts';
import { consoleTable } from './table.ts';

type Endpoint = Awaited<ReturnType<typeof listWorkspaceEndpoints>>[number];
type Delivery = Awaited<ReturnType<typeof listEndpointDeliveryLog>>[number];

const endpointForm = { heading: 'Add an endpoint', purpose: 'add endpoints', submit: 'Add endpoint' };

function endpointFields(c: ConsoleContext, typed: TypedForm = {}): SafeHtml {
  const events = ([] as string[]).concat(typed.events ?? []);
  return html`<label for="wh-url">URL</label
    ><input id="wh-url" type="url" name="url" required value="${String(typed.url ?? '')}" />
    ${projectSelect(c, 'wh-project', String(typed.project ?? ''))}
    <fieldset>
      <legend>Events</legend>
      ${webhookEventTypes.map(
        (t) =>
          html`<label class="choice"
            ><input type="checkbox" name="events" value="${t}" ${events.includes(t) ? html`checked` : ''} />
            ${t}</label
          >`,
      )}
    </fieldset>`;
}

export function webhooksView(
  c: ConsoleContext,
  endpoints: readonly Endpoint[],
  next: string | null,
  error?: string,
  typed?: TypedForm,
): SafeHtml {
  return html`<h1>Webhooks</h1>
    ${consoleTable(
      ['URL', 'Project', 'Events', 'State', 'Actions'],
      endpoints,
      (e) =>
        html`<tr data-endpoint="${e.id}">
          <td>
            <a href="${c.base}/webhooks/${e.id}"><code>${e.url}</code></a>
          </td>
          <td>${e.project_name}</td>
          <td>${e.events.join(', ')}</td>
          <td>
            <div>
              ${e.enabled ? 'enabled' : 'disabled'}${
                e.previous_secret_until
                  ? html`<br /><span class="muted"
                        >old secret accepted until ${when(e.previous_secret_until)}</span
                      >`
                  : ''
              }
            </div>
          </td>
          <td>
            ${
              c.member.has_developer_access
                ? html`<div class="actions">
                    <a class="button" href="${c.base}/webhooks/${e.id}/rotate">Rotate secret…</a>
                    ${
                      e.enabled
                        ? html`<a class="button danger" href="${c.base}/webhooks/${e.id}/disable"
                            >Disable…</a
                          >`
                        : html`<form class="inline" method="post" action="${c.base}/webhooks/${e.id}/enabled">
                            ${csrfField(c)}<input type="hidden" name="enabled" value="on" />
                            <button type="submit">Enable</button>
                          </form>`
                    }
                  </div>`
                : ''
            }
          </td>
        </tr>`,
      {
        empty: 'No webhook endpoints.',
        olderHref: next && `${c.base}/webhooks?cursor=${next}`,
        older: 'Older endpoints',
      },
    )}
    ${developerForm(c, `${c.base}/webhooks`, endpointForm, endpointFields(c, typed), error)}`;
}

/**
 * The endpoint's signing secret as it stands, truthfully: during a rotation's overlap deliveries
 * carry both signatures until the old secret's end (database clock); and what a developer can do
 * about it, with the test event.
 */
function signingSection(
  c: ConsoleContext,
  endpoint: { id: string; enabled: boolean; previous_secret_until: string | null },
): SafeHtml {
  const base = `${c.base}/webhooks/${endpoint.id}`;
  const state = endpoint.previous_secret_until
    ? html`<p class="warning" data-overlap>
        Old secret accepted until ${when(endpoint.previous_secret_until)}: every delivery carries a signature
        made with the new secret and one made with the old, so a receiver holding either accepts it.
      </p>`
    : html`<p>Every delivery is signed with the endpoint's one secret.</p>`;
  const actions = c.member.has_developer_access
    ? html`<div class="actions">
          <a class="button" href="${base}/rotate">Rotate secret…</a>
          ${
            endpoint.previous_secret_until
              ? html`<a class="button" href="${base}/expire-old-secret">Expire the old secret now…</a>`
              : ''
          }
          ${
            endpoint.enabled
              ? html`<form class="inline" method="post" action="${base}/test">
                  ${csrfField(c)}<button type="submit">Send test event</button>
                </form>`
              : ''
          }
        </div>
        ${
          endpoint.enabled
            ? html`<p class="muted">
                A test event is a signed <code>${webhookTestEventType}</code> event sent to this endpoint
                alone.
              </p>`
            : ''
        }`
    : '';
  return html`<h2>Signing secret</h2>
    ${state}${actions}`;
}

/**
 * A delivery's status, with when its next attempt is due while it is pending (one element, so a
 * phone's card keeps both lines in the value column).
 */
function deliveryStatus(d: Delivery): SafeHtml {
  if (d.status !== 'pending' || d.next_attempt_at === null) return html`${d.status}`;
  return html`<div>${d.status}<br /><span class="muted">next attempt ${when(d.next_attempt_at)}</span></div>`;
}

export function deliveriesView(
  c: ConsoleContext,
  endpoint: { id: string; url: string; enabled: boolean; previous_secret_until: string | null },
  deliveries: readonly Delivery[],
  next: string | null,
  refused?: { error: string; since: string },
): SafeHtml {
  const canResend = endpoint.enabled && c.member.has_developer_access;
  return html`<h1>Deliveries to <code>${endpoint.url}</code></h1>
    <p class="muted">${endpoint.enabled ? 'Enabled.' : 'Disabled: nothing is sent.'}</p>
    ${signingSection(c, endpoint)}
    <h2>Deliveries</h2>
    ${canResend ? resendSinceForm(c, endpoint.id, refused) : ''}
    ${consoleTable(
      ['Event', 'Status', 'Attempts', 'Actions'],
      deliveries,
      (d) =>
        html`<tr data-delivery="${d.id}">
          <td>
            <div>
              ${d.event_type}<br /><code class="muted">${d.event_id}</code><br />${when(d.created_at)}
            </div>
          </td>
          <td>${deliveryStatus(d)}</td>
          <td>
            <ol>
              ${d.attempt_log.map(
                (a) =>
                  html`<li>
                    ${a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`}, ${a.duration_ms} ms,
                    ${when(a.created_at)}${a.error ? html` — ${a.error}` : ''}
                    ${a.reason ? html`<br /><span class="muted">${a.reason}</span>` : ''}
                    ${a.response_excerpt ? html`<pre>${a.response_excerpt}</pre>` : ''}
                  </li>`,
              )}
            </ol>
          </td>
          <td>
            ${
              canResend
                ? html`<form
                    class="inline"
                    method="post"
                    action="${c.base}/webhooks/${endpoint.id}/deliveries/${d.id}/resend"
                  >
                    ${csrfField(c)}<button type="submit">
                      ${d.status === 'pending' ? 'Send now' : 'Resend'}<span class="sr-only">
                        ${d.event_type} ${d.event_id}</span
                      >
                    </button>
                  </form>`
                : ''
            }
          </td>
        </tr>`,
      {
        empty: 'No deliveries yet.',
        olderHref: next && `${c.base}/webhooks/${endpoint.id}?cursor=${next}`,
        older: 'Older deliveries',
      },
    )}
    <p><a href="${c.base}/webhooks">Back to webhooks</a></p>`;
}

/**
 * "Resend failed since…": a GET to the confirmation page, which counts what it would resend. The
 * time is read as UTC (the page shows every time in UTC).
 */
function resendSinceForm(
  c: ConsoleContext,
  endpointId: string,
  refused?: { error: string; since: string },
): SafeHtml {
  return html`<form method="get" action="${c.base}/webhooks/${endpointId}/resend">
    <label for="resend-since">Resend failed deliveries created since (UTC)</label>
    ${refused ? html`<p class="alert" role="alert" id="resend-since-error">${refused.error}</p>` : ''}
    <div class="actions">
      <input
        id="resend-since"
        name="since"
        type="datetime-local"
        step="1"
        required
        value="${refused?.since ?? ''}"
        ${refused ? html`aria-invalid="true" aria-describedby="resend-since-error"` : ''}
      />
      <button type="submit">Resend failed since…</button>
    </div>
  </form>`;
}

/**
 * The signing secret's one showing, after an endpoint is added or its secret rotated (`oldUntil`:
 * the replaced secret signs deliveries too until then).
 */
export function webhookReveal(
  c: ConsoleContext,
  title: string,
  url: string,
  secret: string,
  oldUntil: string | null = null,
): Reveal {
  return {
    title,
    heading: `Signing secret for ${url}`,
    note: oldUntil
      ? `Deliveries are signed with this secret from now on, and with the old one too until ${when(oldUntil)}: give your receiver this secret before then.`
      : 'Deliveries are signed with this secret from now on.',
    fields: [{ label: 'Secret', value: secret, secret: true }],
    back: { href: `${c.base}/webhooks`, label: 'Back to webhooks' },
  };
}
