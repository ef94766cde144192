import type {
  listSpendRecords,
  SpendSplit,
  sumDailySpend,
} from '../../../shared/db/queries/meteringRecords.ts';
import { lastUtcDays } from '../../../shared/primitives/utcDays.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, money } from './context.ts';
import { consoleTable } from './table.ts';
import { usageChart } from './usageChart.ts';

type DayPart = Awaited<ReturnType<typeof sumDailySpend>>[number];
type SpendRecord = Awaited<ReturnType<typeof listSpendRecords>>[number];

const splitWords: Record<SpendSplit, string> = {
  project: 'project',
  key: 'key',
  app: 'OAuth app',
  operation: 'operation',
};

/** The periods the chart offers, in days; the console opens on the longest. */
export const periods = [7, 30, 90] as const;
export type Period = (typeof periods)[number];

/** What the chart shows: its split and its period. */
export type UsageView = { split: SpendSplit; days: Period };

/** What a records list covers: one UTC day (`day`), or the `days` up to today. */
export type SpendWindow = { from: string; to: string; day: string | null; days: number };

/** A part's name for people; its id only when the name is gone (a deleted key), '(none)' without one. */
export const partName = (names: ReadonlyMap<string, string>, part: string | null) =>
  part === null ? '(none)' : (names.get(part) ?? part);

function usageForm(c: ConsoleContext, { split, days }: UsageView): SafeHtml {
  return html`<form class="filters" method="get" action="${c.base}/usage">
    <div>
      <label for="split">Split by</label>
      <select id="split" name="split">
        ${(Object.keys(splitWords) as SpendSplit[]).map(
          (s) => html`<option value="${s}" ${s === split ? html`selected` : ''}>${splitWords[s]}</option>`,
        )}
      </select>
    </div>
    <div>
      <label for="days">Period</label>
      <select id="days" name="days">
        ${periods.map(
          (p) => html`<option value="${p}" ${p === days ? html`selected` : ''}>Last ${p} days</option>`,
        )}
      </select>
    </div>
    <div><button type="submit">Show</button></div>
  </form>`;
}

/** The chart (SVG, each bar a link to its records), its legend, and the same numbers as a table. */
export function usageView(
  c: ConsoleContext,
  view: UsageView,
  rows: readonly DayPart[],
  names: ReadonlyMap<string, string>,
  now: number,
): SafeHtml {
  const { split } = view;
  const days = lastUtcDays(view.days, now);
  const period = `the last ${view.days} days`;
  const parts = [...new Set(rows.map((r) => r.part))];
  const swatch = (part: string | null) => `s${parts.indexOf(part) % 8}`;
  const currency = c.member.currency;
  const name = (part: string | null) => partName(names, part);
  const total = rows.reduce((sum, r) => sum + r.cost_minor, 0);
  const spentDays = [...new Set(rows.map((r) => r.day))].reverse();
  const chart = usageChart({
    days,
    segments: rows.map((r) => ({ day: r.day, part: r.part, cost: r.cost_minor })),
    name,
    swatch,
    money: (minor) => money(minor, currency),
    currency,
    href: (day, part) => `${c.base}/usage/records?day=${day}&split=${split}&part=${part ?? ''}`,
  });
  return html`<h1>Usage and spend</h1>
    <p>Credit balance: <strong>${money(c.member.balance_minor, currency)}</strong></p>
    <p>Spend in ${period}: ${money(total, currency)}</p>
    ${usageForm(c, view)}
    ${rows.length === 0 ? html`<p>No spend in ${period}: live calls made with your keys show here.</p>` : html`<div class="chart-wrap" role="region" tabindex="0" aria-label="Spend chart">${chart}</div>`}
    <ul class="legend" aria-label="Legend">
      ${parts.map((p) => html`<li><span class="swatch ${swatch(p)}"></span>${name(p)}</li>`)}
    </ul>
    ${consoleTable(['Day (UTC)', `Spend by ${splitWords[split]}`, 'Total', 'Records'], spentDays, (day) => {
      const dayRows = rows.filter((r) => r.day === day);
      return html`<tr>
        <td class="nowrap">${day}</td>
        <td>
          ${dayRows.map((r) => html`<span class="nowrap">${name(r.part)}: ${money(r.cost_minor, currency)}</span><br />`)}
        </td>
        <td class="num">
          ${money(
            dayRows.reduce((s, r) => s + r.cost_minor, 0),
            currency,
          )}
        </td>
        <td><a href="${c.base}/usage/records?day=${day}&split=${split}">Records of ${day}</a></td>
      </tr>`;
    })}
    <p>
      <a href="${c.base}/usage.csv?split=${split}&days=${view.days}" download>Download ${period} as CSV</a>
    </p>`;
}

/** The chart a records list came from: its split, and its period unless the list is one day's. */
function backQuery(query: URLSearchParams): string {
  const back = new URLSearchParams({ split: query.get('split') ?? 'project' });
  const days = query.get('days');
  if (days) back.set('days', days);
  return back.toString();
}

/** A record's usage as "input_tokens: 12, output_tokens: 40": spaces where a line may wrap. */
const usageWords = (usage: Readonly<Record<string, number>>) =>
  Object.entries(usage)
    .map(([name, value]) => `${name}: ${value}`)
    .join(', ');

/** The records behind a bar: names first, ids beside them (monospace, copyable). */
export function recordsView(
  c: ConsoleContext,
  records: readonly SpendRecord[],
  names: ReadonlyMap<string, string>,
  at: { window: SpendWindow; part: string | undefined; query: URLSearchParams; next: string | null },
): SafeHtml {
  const named = (id: string | null) =>
    id === null ? '' : html`${names.get(id) ?? ''} <code class="muted">${id}</code>`;
  return html`<h1>
      Metering records ${at.window.day ? html`of ${at.window.day}` : `of the last ${at.window.days} days`}
    </h1>
    ${at.part !== undefined ? html`<p class="muted">Only ${partName(names, at.part || null)} <code>${at.part}</code>.</p>` : ''}
    <p><a href="${c.base}/usage.csv?${at.query.toString()}" download>Download as CSV</a></p>
    ${consoleTable(
      [
        'Time (UTC)',
        'Operation',
        'Provider',
        'Model',
        'Project',
        'Key or app',
        'Mode',
        'Usage',
        'Cost',
        'Request',
      ],
      records,
      (r) =>
        html`<tr>
          <td class="nowrap">${r.created_at.replace('T', ' ').slice(0, 19)}</td>
          <td>${names.get(r.operation) ?? r.operation}</td>
          <td>${r.provider ?? ''}</td>
          <td><code>${r.model ?? ''}</code></td>
          <td>${named(r.project_id)}</td>
          <td>${named(r.key_id ?? r.oauth_app_id)}</td>
          <td>${r.livemode ? 'live' : 'test'}</td>
          <td><code>${usageWords(r.usage)}</code></td>
          <td class="num">${money(r.cost_minor, r.currency)}</td>
          <td><code>${r.request_id ?? ''}</code></td>
        </tr>`,
      {
        empty: 'No records.',
        olderHref: at.next && `${c.base}/usage/records${at.next}`,
        older: 'Older records',
      },
    )}
    <p><a href="${c.base}/usage?${backQuery(at.query)}">Back to usage</a></p>`;
}
