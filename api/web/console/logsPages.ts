import type { RequestHandler } from 'express';

import {
  findWorkspaceRequestLog,
  listFilteredRequestLogs,
  type RequestLogFilter,
} from '../../../shared/db/queries/requestLogs.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import type { BrowserContext } from '../browserContext.ts';
import { consoleContext, param } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';
import { logDetailView, logsView } from './logsViews.ts';
import { decodePageCursor, readPage } from './pageCursor.ts';

// The console shows what the log keeps (DESIGN.md: 30 days).
const retentionDays = 30;

const isoOrUndefined = (value: string) =>
  value !== '' && !Number.isNaN(Date.parse(`${value}Z`)) ? new Date(`${value}Z`).toISOString() : undefined;

/** Reads the filters from the query string; anything unreadable is simply not applied. */
function readFilter(doc: ApiDocument, query: (name: string) => string): RequestLogFilter {
  const status = query('status');
  const operation = query('operation');
  return {
    keyId: query('key') || undefined,
    oauthAppId: query('app') || undefined,
    status: /^[1-5]xx$/.test(status)
      ? { class: Number(status[0]) }
      : /^[1-5]\d\d$/.test(status)
        ? { exact: Number(status) }
        : undefined,
    operation: doc.operations.some((o) => o.id === operation) ? operation : undefined,
    since: isoOrUndefined(query('since')),
    until: isoOrUndefined(query('until')),
  };
}

/** GET /console/:memberId/logs */
export function showLogs(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const query = (name: string) => param(req, name);
    const filter = readFilter(web.doc, query);
    // A request log's id is a number: a cursor with any other id is the first page.
    const { items: calls, next } = await readPage(query('cursor'), ({ before, limit }) =>
      listFilteredRequestLogs(web.pool, c.member.workspace_id, filter, {
        before: before && /^\d+$/.test(before.id) ? { at: before.at, id: Number(before.id) } : undefined,
        limit,
        retentionDays,
      }),
    );
    const kept = new URLSearchParams();
    for (const name of ['key', 'app', 'status', 'operation', 'since', 'until']) {
      if (query(name)) kept.set(name, query(name));
    }
    sendConsolePage(res, 200, 'Request log', c, 'logs', logsView(c, web.doc, calls, kept, next, query), {
      wide: true,
    });
  };
}

/** GET /console/:memberId/logs/:cursor: one call, found by its primary key within this workspace. */
export function showLog(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const at = decodePageCursor(String(req.params.call));
    const call =
      at && /^\d+$/.test(at.id)
        ? await findWorkspaceRequestLog(web.pool, c.member.workspace_id, at.at, Number(at.id))
        : null;
    if (!call) return sendConsoleError(res, c, 404, 'Not found', 'No such call in this workspace.');
    sendConsolePage(res, 200, 'Call', c, 'logs', logDetailView(c, call), { wide: true });
  };
}
