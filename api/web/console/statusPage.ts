import type { RequestHandler } from 'express';

import type { StatusSnapshots } from '../../status/statusSnapshots.ts';
import { html, sendPage } from '../html.ts';

const words = { operational: 'Operational', degraded: 'Degraded', outage: 'Outage', unknown: 'Unknown' };

function barClass(uptime: number | null): string {
  if (uptime === null) return 'none';
  return uptime >= 99.9 ? 'up' : uptime >= 95 ? 'partial' : 'down';
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
        <p class="muted">Last checked ${body.checkedAt ?? 'never'}.</p>
        ${body.components.map(
          (c) =>
            html`<section data-component="${c.component}">
              <h2>${c.label}: ${words[c.state]}</h2>
              <p class="muted">
                90-day uptime ${c.uptime90dPercent === null ? 'unknown' : `${c.uptime90dPercent}%`}
              </p>
              <div class="bars" role="img" aria-label="${c.label}: daily uptime for 90 days">
                ${c.days.map(
                  (d) =>
                    html`<span
                      class="${barClass(d.uptimePercent)}"
                      title="${d.day}: ${d.uptimePercent === null ? 'no data' : `${d.uptimePercent}%`}"
                    ></span>`,
                )}
              </div>
            </section>`,
        )}`,
      { wide: true },
    );
  };
}
