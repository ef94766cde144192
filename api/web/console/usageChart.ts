import { html, type SafeHtml } from '../html.ts';

/** One stacked segment: a day's spend on one part of the split. */
export type ChartSegment = { day: string; part: string | null; cost: number };

export type ChartInput = {
  days: readonly string[];
  segments: readonly ChartSegment[];
  /** A part's name (project, key, app or operation), never its id. */
  name: (part: string | null) => string;
  /** The swatch class of a part (s0…s7), the same in the legend. */
  swatch: (part: string | null) => string;
  money: (minor: number) => string;
  currency: string;
  href: (day: string, part: string | null) => string;
};

const width = 720;
const height = 260;
const pad = { left: 64, right: 8, top: 12, bottom: 44 };
const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A round axis maximum (1, 2 or 5 times a power of ten) at or above `value`. */
function niceMax(value: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(value, 1)));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value) ?? 10 * power;
}

const shortDate = (day: string) => `${months[Number(day.slice(5, 7)) - 1]} ${Number(day.slice(8, 10))}`;

/**
 * Spend per day as a server-rendered SVG: stacked bars (one link per part, opening its records),
 * a value axis in the workspace's currency, a date axis, each segment's value on hover (<title>).
 * No script and no inline style: the CSP allows neither, and the numbers are in a table beside it.
 */
export function usageChart(input: ChartInput): SafeHtml {
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const totals = new Map<string, number>();
  for (const s of input.segments) totals.set(s.day, (totals.get(s.day) ?? 0) + s.cost);
  const top = niceMax(Math.max(1, ...totals.values()));
  const slot = plotW / input.days.length;
  const barW = Math.max(1, slot * 0.8);
  const y = (minor: number) => pad.top + plotH - (plotH * minor) / top;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => top * f);
  const labelEvery = Math.ceil(input.days.length / 6);
  const last = input.days.length - 1;
  const stacked = new Map<string, number>();
  const bars = input.segments.map((s) => {
    const below = stacked.get(s.day) ?? 0;
    stacked.set(s.day, below + s.cost);
    const x = pad.left + input.days.indexOf(s.day) * slot + (slot - barW) / 2;
    // A day's smallest spend still shows: at least 2 px tall.
    const h = Math.max(2, y(below) - y(below + s.cost));
    const label = `${s.day} ${input.name(s.part)}: ${input.money(s.cost)}`;
    return html`<a href="${input.href(s.day, s.part)}" aria-label="${label}"
      ><rect
        class="${input.swatch(s.part)}"
        x="${x.toFixed(1)}"
        y="${(y(below) - h).toFixed(1)}"
        width="${barW.toFixed(1)}"
        height="${h.toFixed(1)}"
        ><title>${label}</title></rect
      ></a
    >`;
  });
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="group" aria-labelledby="chart-title">
    <title id="chart-title">
      Spend per day (${input.currency}), ${input.days[0]} to ${input.days.at(-1)}
    </title>
    ${ticks.map(
      (t) =>
        html`<line class="grid" x1="${pad.left}" x2="${width - pad.right}" y1="${y(t)}" y2="${y(t)}" />
          <text x="${pad.left - 6}" y="${y(t) + 4}" text-anchor="end">${(t / 100).toFixed(2)}</text>`,
    )}
    <line class="axis" x1="${pad.left}" x2="${pad.left}" y1="${pad.top}" y2="${pad.top + plotH}" />
    <text
      class="axis-title"
      transform="rotate(-90)"
      x="${-(pad.top + plotH / 2)}"
      y="14"
      text-anchor="middle"
    >
      Spend (${input.currency})
    </text>
    ${input.days.map((day, i) =>
      i % labelEvery === 0 || (i === last && last % labelEvery >= labelEvery / 2)
        ? html`<text
            x="${(pad.left + (i + 0.5) * slot).toFixed(1)}"
            y="${pad.top + plotH + 16}"
            text-anchor="${i === last ? 'end' : i === 0 ? 'start' : 'middle'}"
            >${shortDate(day)}</text
          >`
        : '',
    )}
    <text class="axis-title" x="${pad.left + plotW / 2}" y="${height - 6}" text-anchor="middle">
      Day (UTC)
    </text>
    ${bars}
  </svg>`;
}
