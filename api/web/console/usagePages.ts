import { stringify } from 'csv-stringify/sync';
import type { Request, RequestHandler } from 'express';

import {
  listSpendRecords,
  type MeteringCursor,
  type SpendSplit,
  sumDailySpend,
} from '../../../shared/db/queries/meteringRecords.ts';
import { dayMs, utcDayStart } from '../../../shared/primitives/utcDays.ts';
import type { BrowserContext } from '../browserContext.ts';
import { consoleContext, param } from './context.ts';
import { sendConsolePage } from './layout.ts';
import { readPage } from './pageCursor.ts';
import { namesFor, recordNames } from './spendNames.ts';
import { type Period, periods, recordsView, type SpendWindow, usageView } from './usageViews.ts';

const splits: readonly SpendSplit[] = ['project', 'key', 'app', 'operation'];

function readSplit(req: Request): SpendSplit {
  const value = param(req, 'split');
  return (splits as readonly string[]).includes(value) ? (value as SpendSplit) : 'project';
}

/** The chart's period in days (`days=`); anything else is the longest, which the console opens on. */
function readPeriod(req: Request): Period {
  const value = Number(param(req, 'days'));
  return periods.find((p) => p === value) ?? 90;
}

/** The window a records list or CSV covers: one UTC day when `day` is given, else the chart's period. */
function readWindow(req: Request, now: number): SpendWindow {
  const day = param(req, 'day');
  if (/^\d{4}-\d{2}-\d{2}$/.test(day) && !Number.isNaN(Date.parse(`${day}T00:00:00Z`))) {
    const from = Date.parse(`${day}T00:00:00Z`);
    return { from: new Date(from).toISOString(), to: new Date(from + dayMs).toISOString(), day, days: 1 };
  }
  const days = readPeriod(req);
  const today = utcDayStart(now);
  return {
    from: new Date(today - (days - 1) * dayMs).toISOString(),
    to: new Date(today + dayMs).toISOString(),
    day: null,
    days,
  };
}

/**
 * Which records a list or CSV shows: the window, the split and the part. `part=` present (even
 * empty, for records with no key or app) narrows the list.
 */
function readRecordsFilter(req: Request, now: number) {
  const part = typeof req.query.part === 'string' ? req.query.part : undefined;
  return { window: readWindow(req, now), split: readSplit(req), part };
}

/** GET /console/:memberId/usage */
export function showUsage(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const split = readSplit(req);
    const days = readPeriod(req);
    const rows = await sumDailySpend(web.pool, c.member.workspace_id, split, days);
    const names = await namesFor(
      web,
      c,
      split,
      rows.map((r) => r.part),
    );
    sendConsolePage(
      res,
      200,
      'Usage and spend',
      c,
      'usage',
      usageView(c, { split, days }, rows, names, web.clock()),
    );
  };
}

/** GET /console/:memberId/usage/records: the metering records behind a bar (or a bar's part). */
export function showSpendRecords(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const { window, split, part } = readRecordsFilter(req, web.clock());
    const page = await readPage(param(req, 'cursor'), (p) =>
      listSpendRecords(web.pool, c.member.workspace_id, { ...window, split, part, ...p }),
    );
    const query = new URLSearchParams({ split });
    if (window.day) query.set('day', window.day);
    else query.set('days', String(window.days));
    if (part !== undefined) query.set('part', part);
    const next = page.next ? `?${new URLSearchParams([...query, ['cursor', page.next]]).toString()}` : null;
    const names = await recordNames(web, c, page.items);
    const view = recordsView(c, page.items, names, { window, part, query, next });
    sendConsolePage(res, 200, 'Metering records', c, 'usage', view);
  };
}

/** GET /console/:memberId/usage.csv: the same records as CSV, every page of them, streamed. */
export function downloadSpendCsv(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const { window, split, part } = readRecordsFilter(req, web.clock());
    res.set({
      'Content-Type': 'text/csv; charset=utf-8',
      'Content-Disposition': `attachment; filename="usage-${window.day ?? `last-${window.days}-days`}.csv"`,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    const columns = ['created_at', 'id', 'project_id', 'key_id', 'oauth_app_id', 'operation', 'livemode'];
    // New columns go at the end: parsers of the export read the older ones by position.
    const added = ['provider', 'model'];
    res.write(stringify([[...columns, 'cost_minor', 'currency', 'request_id', 'usage', ...added]]));
    let before: MeteringCursor | undefined;
    for (;;) {
      const rows = await listSpendRecords(web.pool, c.member.workspace_id, {
        ...window,
        split,
        part,
        before,
        limit: 1000,
      });
      if (rows.length === 0) break;
      res.write(
        stringify(
          rows.map((r) => [
            r.created_at,
            r.id,
            r.project_id,
            r.key_id ?? '',
            r.oauth_app_id ?? '',
            r.operation,
            r.livemode,
            r.cost_minor,
            r.currency,
            r.request_id ?? '',
            JSON.stringify(r.usage),
            r.provider ?? '',
            r.model ?? '',
          ]),
          // A spreadsheet would run a cell that starts with = + - @ as a formula.
          { cast: { string: (v) => (/^[=+\-@]/.test(v) ? `'${v}` : v) } },
        ),
      );
      const last = rows.at(-1)!;
      before = { at: last.cursor_at, id: last.id };
      if (rows.length < 1000) break;
    }
    res.end();
  };
}
