import type { listEndpointDeliveryLog, listWorkspaceEndpoints } from '../../../shared/db/queries/webhooks.ts';
import { webhookEventTypes } from '../../../shared/webhooks/fanout.ts';
import { html, type SafeHtml, secretField } from '../html.ts';
import { type ConsoleContext, when } from './context.ts';
import { listEnd } from './layout.ts';

type Endpoint = Awaited<ReturnType<typeof listWorkspaceEndpoints>>[number];
type Delivery = Awaited<ReturnType<typeof listEndpointDeliveryLog>>[number];

const csrfField = (c: ConsoleContext) => html`<input type="hidden" name="_csrf" value="${c.csrf}" />`;

export function webhooksView(
  c: ConsoleContext,
  endpoints: readonly Endpoint[],
  next: string | null,
  error?: string,
): SafeHtml {
  return html`<h1>Webhooks</h1>
    <table>
      <thead>
        <tr>
          <th>URL</th>
          <th>Project</th>
          <th>Events</th>
          <th>State</th>
          <th>Actions</th>
        </tr>
      </thead>
      <tbody>
        ${endpoints.map(
          (e) =>
            html`<tr data-endpoint="${e.id}">
              <td>
                <a href="${c.base}/webhooks/${e.id}"><code>${e.url}</code></a>
              </td>
              <td>${e.project_name}</td>
              <td>${e.events.join(', ')}</td>
              <td>${e.enabled ? 'enabled' : 'disabled'}</td>
              <td>
                ${
                  c.member.has_developer_access
                    ? html`<form class="inline" method="post" action="${c.base}/webhooks/${e.id}/rotate">
                          ${csrfField(c)}<button type="submit">Rotate secret</button>
                        </form>
                        <form class="inline" method="post" action="${c.base}/webhooks/${e.id}/enabled">
                          ${csrfField(c)}<input
                            type="hidden"
                            name="enabled"
                            value="${e.enabled ? 'off' : 'on'}"
                          />
                          <button type="submit">${e.enabled ? 'Disable' : 'Enable'}</button>
                        </form>`
                    : ''
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${listEnd(endpoints.length, 'No webhook endpoints.', next && `${c.base}/webhooks?cursor=${next}`, 'Older endpoints')}
    ${
      c.member.has_developer_access
        ? html`<h2>Add an endpoint</h2>
            ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
            <form method="post" action="${c.base}/webhooks">
              ${csrfField(c)}
              <label for="wh-url">URL</label><input id="wh-url" type="text" name="url" required size="60" />
              <label for="wh-project">Project</label>
              <select id="wh-project" name="project">
                ${c.member.projects.map((p) => html`<option value="${p.id}">${p.name}</option>`)}
              </select>
              <fieldset>
                <legend>Events</legend>
                ${webhookEventTypes.map(
                  (t) => html`<label><input type="checkbox" name="events" value="${t}" /> ${t}</label>`,
                )}
              </fieldset>
              <button type="submit">Add endpoint</button>
            </form>`
        : html`<p class="muted">You need developer access to add endpoints.</p>`
    }`;
}

export function deliveriesView(
  c: ConsoleContext,
  endpoint: { id: string; url: string; enabled: boolean },
  deliveries: readonly Delivery[],
  next: string | null,
): SafeHtml {
  return html`<h1>Deliveries to <code>${endpoint.url}</code></h1>
    <p class="muted">${endpoint.enabled ? 'Enabled.' : 'Disabled: nothing is sent.'}</p>
    <table>
      <thead>
        <tr>
          <th>Event</th>
          <th>Status</th>
          <th>Attempts</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${deliveries.map(
          (d) =>
            html`<tr data-delivery="${d.id}">
              <td>
                ${d.event_type}<br /><code class="muted">${d.event_id}</code><br />${when(d.created_at)}
              </td>
              <td>${d.status}</td>
              <td>
                <ol>
                  ${d.attempt_log.map(
                    (a) =>
                      html`<li>
                        ${a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`}, ${a.duration_ms}
                        ms, ${when(a.created_at)}${a.error ? html` — ${a.error}` : ''}
                        ${a.response_excerpt ? html`<pre>${a.response_excerpt}</pre>` : ''}
                      </li>`,
                  )}
                </ol>
              </td>
              <td>
                ${
                  d.status !== 'pending' && c.member.has_developer_access
                    ? html`<form
                        class="inline"
                        method="post"
                        action="${c.base}/webhooks/${endpoint.id}/deliveries/${d.id}/resend"
                      >
                        ${csrfField(c)}<button type="submit">Resend</button>
                      </form>`
                    : ''
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${listEnd(
      deliveries.length,
      'No deliveries yet.',
      next && `${c.base}/webhooks/${endpoint.id}?cursor=${next}`,
      'Older deliveries',
    )}
    <p><a href="${c.base}/webhooks">Back to webhooks</a></p>`;
}

export function webhookSecretView(c: ConsoleContext, url: string, secret: string): SafeHtml {
  return html`<h1>Signing secret for <code>${url}</code></h1>
    <p>Deliveries are signed with this secret from now on. Copy it now: it will not be shown again.</p>
    ${secretField('Secret', secret)}
    <p><a href="${c.base}/webhooks">Back to webhooks</a></p>`;
}
