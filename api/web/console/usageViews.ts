import type {
  listSpendRecords,
  SpendSplit,
  sumDailySpend,
} from '../../../shared/db/queries/meteringRecords.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, money } from './context.ts';
import { listEnd } from './layout.ts';
import { consoleTable } from './table.ts';

type DayPart = Awaited<ReturnType<typeof sumDailySpend>>[number];
type SpendRecord = Awaited<ReturnType<typeof listSpendRecords>>[number];

const colours = ['#36c', '#c63', '#393', '#939', '#cc3', '#3cc', '#c36', '#666'];
const splitWords: Record<SpendSplit, string> = {
  project: 'project',
  key: 'key',
  app: 'OAuth app',
  operation: 'operation',
};

function lastDays(count: number, now: number): string[] {
  const today = Date.parse(`${new Date(now).toISOString().slice(0, 10)}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) =>
    new Date(today - (count - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

/** A part's name: projects and keys by their id (names change), none for records without one. */
const partLabel = (part: string | null) => part ?? '(none)';

/** The chart is HTML: a column per day, a stacked link per part, so every bar opens its records. */
export function usageView(
  c: ConsoleContext,
  split: SpendSplit,
  rows: readonly DayPart[],
  now: number,
): SafeHtml {
  const days = lastDays(90, now);
  const byDay = new Map<string, DayPart[]>();
  for (const row of rows) byDay.set(row.day, [...(byDay.get(row.day) ?? []), row]);
  const parts = [...new Set(rows.map((r) => r.part))];
  const colour = (part: string | null) => colours[parts.indexOf(part) % colours.length]!;
  const max = Math.max(1, ...days.map((d) => (byDay.get(d) ?? []).reduce((sum, r) => sum + r.cost_minor, 0)));
  const total = rows.reduce((sum, r) => sum + r.cost_minor, 0);
  const currency = c.member.currency;
  return html`<h1>Usage and spend</h1>
    <p>Credit balance: <strong>${money(c.member.balance_minor, currency)}</strong></p>
    <p>Spend in the last 90 days: ${money(total, currency)}</p>
    <form method="get" action="${c.base}/usage">
      <label for="split">Split by</label>
      <select id="split" name="split">
        ${(Object.keys(splitWords) as SpendSplit[]).map(
          (s) => html`<option value="${s}" ${s === split ? html`selected` : ''}>${splitWords[s]}</option>`,
        )}
      </select>
      <button type="submit">Show</button>
    </form>
    <div class="chart" role="group" aria-label="Spend per day, last 90 days">
      ${days.map((day) => {
        const dayRows = byDay.get(day) ?? [];
        const sum = dayRows.reduce((s, r) => s + r.cost_minor, 0);
        return html`<div class="day" title="${day}: ${money(sum, currency)}">
          ${dayRows.map(
            (r) =>
              html`<a
                href="${c.base}/usage/records?day=${day}&split=${split}&part=${r.part ?? ''}"
                style="height: ${Math.max(1, Math.round((100 * r.cost_minor) / max))}%; background: ${colour(r.part)}"
                aria-label="${day} ${partLabel(r.part)}: ${money(r.cost_minor, currency)}"
              ></a>`,
          )}
        </div>`;
      })}
    </div>
    <ul class="legend">
      ${parts.map(
        (p) =>
          html`<li>
            <span style="background: ${colour(p)}">&nbsp;&nbsp;</span> <code>${partLabel(p)}</code>
          </li>`,
      )}
    </ul>
    ${consoleTable(
      ['Day (UTC)', 'Spend', ''],
      [...days].reverse().filter((d) => byDay.has(d)),
      (day) => {
        const sum = (byDay.get(day) ?? []).reduce((s, r) => s + r.cost_minor, 0);
        return html`<tr>
          <td>${day}</td>
          <td>${money(sum, currency)}</td>
          <td><a href="${c.base}/usage/records?day=${day}&split=${split}">Records</a></td>
        </tr>`;
      },
    )}
    <p><a href="${c.base}/usage.csv?split=${split}" download>Download the last 90 days as CSV</a></p>`;
}

export function recordsView(
  c: ConsoleContext,
  records: readonly SpendRecord[],
  day: string | null,
  part: string | undefined,
  query: URLSearchParams,
  next: string | null,
): SafeHtml {
  return html`<h1>Metering records ${day ? html`of ${day}` : 'of the last 90 days'}</h1>
    ${part !== undefined ? html`<p class="muted">Only <code>${partLabel(part || null)}</code>.</p>` : ''}
    <p><a href="${c.base}/usage.csv?${query.toString()}" download>Download as CSV</a></p>
    ${consoleTable(
      ['Time (UTC)', 'Operation', 'Project', 'Key', 'Mode', 'Usage', 'Cost', 'Request'],
      records,
      (r) =>
        html`<tr>
          <td>${r.created_at.replace('T', ' ').slice(0, 19)}</td>
          <td>${r.operation}</td>
          <td><code>${r.project_id}</code></td>
          <td><code>${r.key_id ?? r.oauth_app_id ?? ''}</code></td>
          <td>${r.livemode ? 'live' : 'test'}</td>
          <td><code>${JSON.stringify(r.usage)}</code></td>
          <td>${money(r.cost_minor, r.currency)}</td>
          <td><code>${r.request_id ?? ''}</code></td>
        </tr>`,
    )}
    ${listEnd(records.length, 'No records.', next && `${c.base}/usage/records${next}`, 'Older records')}
    <p><a href="${c.base}/usage">Back to usage</a></p>`;
}
