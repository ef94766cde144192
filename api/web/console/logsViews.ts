import type {
  findWorkspaceRequestLog,
  listFilteredRequestLogs,
} from '../../../shared/db/queries/requestLogs.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, money } from './context.ts';
import { listEnd } from './layout.ts';
import { encodePageCursor } from './pageCursor.ts';
import { consoleTable } from './table.ts';

type Call = Awaited<ReturnType<typeof listFilteredRequestLogs>>[number];
type FullCall = NonNullable<Awaited<ReturnType<typeof findWorkspaceRequestLog>>>;

export function logsView(
  c: ConsoleContext,
  doc: ApiDocument,
  calls: readonly Call[],
  kept: URLSearchParams,
  next: string | null,
  query: (name: string) => string,
): SafeHtml {
  const nextParams = new URLSearchParams(kept);
  if (next) nextParams.set('cursor', next);
  return html`<h1>Request log</h1>
    <form method="get" action="${c.base}/logs">
      <label for="f-key">Key id</label><input id="f-key" type="text" name="key" value="${query('key')}" />
      <label for="f-app">OAuth app id</label
      ><input id="f-app" type="text" name="app" value="${query('app')}" />
      <label for="f-status">Status (e.g. 200 or 4xx)</label
      ><input id="f-status" type="text" name="status" value="${query('status')}" />
      <label for="f-op">Operation</label>
      <select id="f-op" name="operation">
        <option value="">Any</option>
        ${doc.operations.map(
          (o) =>
            html`<option value="${o.id}" ${query('operation') === o.id ? html`selected` : ''}>
              ${o.id}
            </option>`,
        )}
      </select>
      <label for="f-since">From (UTC)</label
      ><input id="f-since" type="datetime-local" name="since" value="${query('since')}" />
      <label for="f-until">Until (UTC)</label
      ><input id="f-until" type="datetime-local" name="until" value="${query('until')}" />
      <button type="submit">Filter</button>
    </form>
    ${consoleTable(
      ['Time (UTC)', 'Method', 'Path', 'Status', 'Latency', 'Cost', 'Key'],
      calls,
      (l) =>
        html`<tr>
          <td>
            <a href="${c.base}/logs/${encodePageCursor(l.cursor_at, l.id)}"
              >${l.created_at.replace('T', ' ').slice(0, 19)}</a
            >
          </td>
          <td>${l.method}</td>
          <td><code>${l.path}</code></td>
          <td>${l.status}</td>
          <td>${l.latency_ms} ms</td>
          <td>${money(l.cost_minor, c.member.currency)}</td>
          <td><code>${l.key_id ?? ''}</code></td>
        </tr>`,
    )}
    ${listEnd(calls.length, 'No calls match.', next && `${c.base}/logs?${nextParams.toString()}`, 'Older calls')}`;
}

const pretty = (body: unknown) =>
  body === null || body === undefined ? '(none)' : JSON.stringify(body, null, 2);

export function logDetailView(c: ConsoleContext, call: FullCall): SafeHtml {
  return html`<h1>${call.method} <code>${call.path}</code></h1>
    <dl>
      <dt>Status</dt>
      <dd>${call.status}</dd>
      <dt>Latency</dt>
      <dd>${call.latency_ms} ms</dd>
      <dt>Cost</dt>
      <dd>${money(call.cost_minor, c.member.currency)}</dd>
      <dt>Request id</dt>
      <dd><code>${call.request_id}</code></dd>
      <dt>Key</dt>
      <dd><code>${call.key_id ?? '—'}</code></dd>
      <dt>Time</dt>
      <dd>${call.created_at}</dd>
    </dl>
    <h2>Request body (redacted)</h2>
    <pre>${pretty(call.request_body)}</pre>
    <h2>Response body (redacted)</h2>
    <pre>${pretty(call.response_body)}</pre>
    <p><a href="${c.base}/logs">Back to the log</a></p>`;
}
