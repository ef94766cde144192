import type { RequestHandler } from 'express';

import { listWorkspaceKeyNames } from '../../../shared/db/queries/apiKeys.ts';
import { listWorkspaceAppNames } from '../../../shared/db/queries/oauthApps.ts';
import { findWorkspaceRequestLog, listFilteredRequestLogs } from '../../../shared/db/queries/requestLogs.ts';
import type { BrowserContext } from '../browserContext.ts';
import { consoleContext, param } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';
import { type LogChoices, readLogFilter } from './logFilter.ts';
import { logDetailView, logsView } from './logsViews.ts';
import { decodePageCursor, readPage } from './pageCursor.ts';

// The console shows what the log keeps (DESIGN.md: 30 days).
const retentionDays = 30;

/** The workspace's keys and apps by name: what the filters offer and how calls name their caller. */
async function logChoices(web: BrowserContext, workspaceId: string): Promise<LogChoices> {
  const [keys, apps] = await Promise.all([
    listWorkspaceKeyNames(web.pool, workspaceId),
    listWorkspaceAppNames(web.pool, workspaceId),
  ]);
  return { keys, apps };
}

/** GET /console/:memberId/logs */
export function showLogs(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const query = (name: string) => param(req, name);
    const choices = await logChoices(web, c.member.workspace_id);
    const { filter, problems } = readLogFilter(web.doc, choices, query, web.clock());
    // A request log's id is a number: a cursor with any other id is the first page. A filter that
    // cannot be applied lists nothing and says why.
    const found = problems.length > 0 ? { items: [], next: null } : undefined;
    const { items: calls, next } =
      found ??
      (await readPage(query('cursor'), ({ before, limit }) =>
        listFilteredRequestLogs(web.pool, c.member.workspace_id, filter, {
          before: before && /^\d+$/.test(before.id) ? { at: before.at, id: Number(before.id) } : undefined,
          limit,
          retentionDays,
        }),
      ));
    const kept = new URLSearchParams();
    for (const name of ['key', 'app', 'status', 'operation', 'range', 'since', 'until']) {
      if (query(name)) kept.set(name, query(name));
    }
    const view = logsView(c, web.doc, { calls, kept, next, query, choices, problems });
    sendConsolePage(res, problems.length > 0 ? 400 : 200, 'Request log', c, 'logs', view);
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
    const view = logDetailView(c, call, await logChoices(web, c.member.workspace_id));
    sendConsolePage(res, 200, 'Call', c, 'logs', view, { wide: true });
  };
}
