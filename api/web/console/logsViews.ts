import { STATUS_CODES } from 'node:http';

import type {
  findWorkspaceRequestLog,
  listFilteredRequestLogs,
} from '../../../shared/db/queries/requestLogs.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, money } from './context.ts';
import { type LogChoices, quickRanges } from './logFilter.ts';
import { encodePageCursor } from './pageCursor.ts';
import { consoleTable } from './table.ts';

type Call = Awaited<ReturnType<typeof listFilteredRequestLogs>>[number];
type FullCall = NonNullable<Awaited<ReturnType<typeof findWorkspaceRequestLog>>>;

type LogsPage = {
  calls: readonly Call[];
  kept: URLSearchParams;
  next: string | null;
  query: (name: string) => string;
  choices: LogChoices;
  problems: readonly string[];
};

const statusClasses = ['2xx', '3xx', '4xx', '5xx'];

type Option = { id: string; label: string };

/** A labelled <select> whose first option, "Any", leaves the filter off. */
function selectField(id: string, label: string, name: string, selected: string, options: readonly Option[]) {
  return html`<div>
    <label for="${id}">${label}</label>
    <select id="${id}" name="${name}">
      <option value="">Any</option>
      ${options.map(
        (o) => html`<option value="${o.id}" ${selected === o.id ? html`selected` : ''}>${o.label}</option>`,
      )}
    </select>
  </div>`;
}

function dateField(id: string, label: string, name: string, value: string) {
  return html`<div>
    <label for="${id}">${label}</label
    ><input id="${id}" type="datetime-local" name="${name}" value="${value}" />
  </div>`;
}

function filterForm(c: ConsoleContext, doc: ApiDocument, p: LogsPage): SafeHtml {
  const { query, choices } = p;
  const keys = choices.keys.map((k) => ({ id: k.id, label: k.revoked ? `${k.name} (revoked)` : k.name }));
  const apps = choices.apps.map((a) => ({ id: a.id, label: a.name }));
  const operations = doc.operations.map((o) => ({ id: o.id, label: `${o.title || o.id} (${o.id})` }));
  return html`<form class="filters" method="get" action="${c.base}/logs">
    ${selectField('f-key', 'Key', 'key', query('key'), keys)}
    ${selectField('f-app', 'OAuth app', 'app', query('app'), apps)}
    <div>
      <label for="f-status">Status (a code, or a class)</label
      ><input id="f-status" type="text" name="status" list="f-status-classes" value="${query('status')}" />
      <datalist id="f-status-classes">
        ${statusClasses.map((s) => html`<option value="${s}"></option>`)}
      </datalist>
    </div>
    ${selectField('f-op', 'Operation', 'operation', query('operation'), operations)}
    ${dateField('f-since', 'From (UTC)', 'since', query('since'))}
    ${dateField('f-until', 'Until (UTC)', 'until', query('until'))}
    <div><button type="submit" class="primary">Filter</button> <a href="${c.base}/logs">Clear</a></div>
  </form>`;
}

/**
 * The quick ranges as links (GET, so a range is a URL to share): each keeps the other filters and
 * replaces the period; the one in force is marked.
 */
function rangeLinks(c: ConsoleContext, p: LogsPage): SafeHtml {
  const href = (range: string) => {
    const params = new URLSearchParams(p.kept);
    for (const name of ['range', 'since', 'until']) params.delete(name);
    if (range) params.set('range', range);
    const search = params.toString();
    return `${c.base}/logs${search ? `?${search}` : ''}`;
  };
  const current = p.query('range');
  const link = (id: string, label: string) =>
    html`<li>
      <a href="${href(id)}" ${current === id ? html`aria-current="page"` : ''}>${label}</a>
    </li>`;
  return html`<nav class="ranges" aria-label="Quick ranges">
    <ul>
      ${quickRanges.map((r) => link(r.id, r.label))} ${link('', 'Any time')}
    </ul>
  </nav>`;
}

/**
 * A call's status as a badge with its words ("404 Not Found"): a failed call (4xx, 5xx) says so in
 * text and stands out in colour too, never by colour alone.
 */
function statusBadge(status: number): SafeHtml {
  const kind = status >= 500 ? 'http-5xx' : status >= 400 ? 'http-4xx' : 'http-ok';
  // 499 is the log's own (the client left before an answer, nginx's name); Node has no words for it.
  const words = STATUS_CODES[status] ?? (status === 499 ? 'Client Closed Request' : '');
  return html`<span class="http-status ${kind}">${status} ${words}</span>`;
}

const failedRow = (status: number) => (status >= 500 ? 'call-5xx' : status >= 400 ? 'call-4xx' : '');

/** A path that may wrap after each slash on a phone, so an id in it stays whole. */
const wrappablePath = (path: string) =>
  path.split('/').map((segment, i) => (i === 0 ? segment : html`/<wbr />${segment}`));

/** Who made a call: the key's or app's name first, its id beside it. */
function caller(choices: LogChoices, l: Pick<Call, 'key_id' | 'oauth_app_id'>): SafeHtml {
  const app = l.oauth_app_id ? choices.apps.find((a) => a.id === l.oauth_app_id) : undefined;
  const key = l.key_id ? choices.keys.find((k) => k.id === l.key_id) : undefined;
  const name = app ? `${app.name} (OAuth app)` : (key?.name ?? '');
  return html`${name} <code class="muted">${l.key_id ?? ''}</code>`;
}

export function logsView(c: ConsoleContext, doc: ApiDocument, p: LogsPage): SafeHtml {
  const nextParams = new URLSearchParams(p.kept);
  if (p.next) nextParams.set('cursor', p.next);
  return html`<h1>Request log</h1>
    ${
      p.problems.length > 0
        ? html`<div class="alert" role="alert">
            <p>These filters cannot be applied:</p>
            <ul>
              ${p.problems.map((problem) => html`<li>${problem}</li>`)}
            </ul>
          </div>`
        : ''
    }
    ${filterForm(c, doc, p)} ${rangeLinks(c, p)}
    ${consoleTable(
      ['Time (UTC)', 'Method', 'Path', 'Status', 'Latency', 'Cost', 'Key or app'],
      p.calls,
      (l) =>
        html`<tr class="${failedRow(l.status)}">
          <td class="nowrap">
            <a href="${c.base}/logs/${encodePageCursor(l.cursor_at, l.id)}"
              >${l.created_at.replace('T', ' ').slice(0, 19)}</a
            >
          </td>
          <td>${l.method}</td>
          <td><code>${wrappablePath(l.path)}</code></td>
          <td>${statusBadge(l.status)}${l.cache_status === 'hit' ? ' (cache hit)' : ''}</td>
          <td class="num">${l.latency_ms} ms</td>
          <td class="num">${money(l.cost_minor, c.member.currency)}</td>
          <td>${caller(p.choices, l)}</td>
        </tr>`,
      {
        empty: p.problems.length > 0 ? 'Fix the filters above to see calls.' : 'No calls match.',
        olderHref: p.next && `${c.base}/logs?${nextParams.toString()}`,
        older: 'Older calls',
      },
    )}`;
}

const pretty = (body: unknown) =>
  body === null || body === undefined ? '(none)' : JSON.stringify(body, null, 2);

export function logDetailView(c: ConsoleContext, call: FullCall, choices: LogChoices): SafeHtml {
  return html`<h1>${call.method} <code>${call.path}</code></h1>
    <dl>
      <dt>Status</dt>
      <dd>${statusBadge(call.status)}</dd>
      <dt>Latency</dt>
      <dd>${call.latency_ms} ms</dd>
      <dt>Cost</dt>
      <dd>${money(call.cost_minor, c.member.currency)}</dd>
      ${
        call.cache_status
          ? html`<dt>Response cache</dt>
              <dd>${call.cache_status}</dd>`
          : ''
      }
      <dt>Request id</dt>
      <dd><code>${call.request_id}</code></dd>
      <dt>Key or app</dt>
      <dd>${call.key_id || call.oauth_app_id ? caller(choices, call) : '—'}</dd>
      <dt>Time</dt>
      <dd>${call.created_at}</dd>
    </dl>
    <h2>Request body (redacted)</h2>
    <pre>${pretty(call.request_body)}</pre>
    <h2>Response body (redacted)</h2>
    <pre>${pretty(call.response_body)}</pre>
    <p><a href="${c.base}/logs">Back to the log</a></p>`;
}
