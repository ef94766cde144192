import type { RequestHandler } from 'express';

import type { StatusSnapshots } from '../../status/statusSnapshots.ts';
import { html, type SafeHtml, sendPage } from '../html.ts';

const words = { operational: 'Operational', degraded: 'Degraded', outage: 'Outage', unknown: 'Unknown' };
const legend = [
  ['up', 'Up (99.9% or more)'],
  ['partial', 'Degraded (95% to 99.9%)'],
  ['down', 'Down (under 95%)'],
  ['none', 'No data'],
] as const;

function barClass(uptime: number | null): string {
  if (uptime === null) return 'none';
  return uptime >= 99.9 ? 'up' : uptime >= 95 ? 'partial' : 'down';
}

/** A time for people: "2026-11-26 14:05 UTC", never a raw ISO string. */
const readable = (iso: string | null) => (iso ? `${iso.replace('T', ' ').slice(0, 16)} UTC` : 'never');

type Day = { day: string; uptimePercent: number | null };

/** The days' bars with a date axis; days without data are drawn apart from days that were up. */
function uptimeBars(label: string, days: readonly Day[]): SafeHtml {
  const measured = days.filter((d) => d.uptimePercent !== null).length;
  return html`<div
      class="bars"
      role="img"
      aria-label="${label}: daily uptime, ${measured} of ${days.length} days with data"
    >
      ${days.map(
        (d) =>
          html`<span
            class="${barClass(d.uptimePercent)}"
            title="${d.day}: ${d.uptimePercent === null ? 'no data' : `${d.uptimePercent}% up`}"
          ></span>`,
      )}
    </div>
    <p class="axis muted"><span>${days[0]?.day ?? ''}</span><span>${days.at(-1)?.day ?? ''}</span></p>`;
}

/** GET /status: the public status page, drawn from the same snapshot GET {api}/status serves. */
export function showStatusPage(status: StatusSnapshots): RequestHandler {
  return async (_req, res) => {
    const { body } = await status.get();
    sendPage(
      res,
      200,
      'Status',
      html`<h1>Status: ${words[body.state]}</h1>
        <p class="muted">Last checked ${readable(body.checkedAt)}.</p>
        <ul class="legend" aria-label="Legend">
          ${legend.map(([cls, text]) => html`<li><span class="swatch ${cls}"></span>${text}</li>`)}
        </ul>
        ${body.components.map((c) => {
          const measured = c.days.filter((d) => d.uptimePercent !== null).length;
          return html`<section data-component="${c.component}">
            <h2>${c.label}: ${words[c.state]}</h2>
            <p class="muted">
              ${
                c.uptime90dPercent === null
                  ? 'No uptime measured yet.'
                  : `Uptime ${c.uptime90dPercent}% over the ${measured} of the last 90 days with data.`
              }
            </p>
            ${uptimeBars(c.label, c.days)}
          </section>`;
        })}`,
      { wide: true },
    );
  };
}
