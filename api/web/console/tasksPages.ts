import type { Request, RequestHandler, Response } from 'express';

import { listMessageFiles, listTaskMessages } from '../../../shared/db/queries/taskMessages.ts';
import { findWorkspaceTask, listTaskBoard, listWorkspaceTasks } from '../../../shared/db/queries/tasks.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import type { ObjectStore } from '../../../shared/storage/objectStore.ts';
import type { WorkspaceDownload } from '../../downloads/sendStoredObject.ts';
import { sendWorkspaceFile } from '../../downloads/workspaceFile.ts';
import { sendWorkspaceVideo } from '../../downloads/workspaceVideo.ts';
import type { BrowserContext } from '../browserContext.ts';
import { consoleContext, param, showList } from './context.ts';
import { sendConsoleError, sendConsolePage } from './layout.ts';
import { decodePageCursor, pageBy, pageSize, readPage } from './pageCursor.ts';
import { tasksView, taskView } from './tasksViews.ts';

/** GET /console/:memberId/tasks */
export const showTasks = (web: BrowserContext) =>
  showList(web, async (web, c, res, cursor) => {
    const { items: tasks, next } = await readPage(cursor, (page) =>
      listWorkspaceTasks(web.pool, c.member.workspace_id, page),
    );
    sendConsolePage(res, 200, 'Tasks', c, 'tasks', tasksView(c, tasks, next), { wide: true });
  });

/**
 * GET /console/:memberId/tasks/:taskId: its media board (newest first) and its messages (in
 * conversation order), each paged by its own cursor; a next link keeps the other list's place.
 */
export function showTask(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const task = await findWorkspaceTask(web.pool, c.member.workspace_id, String(req.params.taskId));
    if (!task) return sendConsoleError(res, c, 404, 'Not found', 'No such task in this workspace.');
    // A messages cursor holds (created_at, seq); the sequence number alone orders a task's messages.
    const afterMessage = decodePageCursor(param(req, 'messages'));
    const afterSeq = afterMessage && /^\d{1,15}$/.test(afterMessage.id) ? Number(afterMessage.id) : 0;
    const [messageRows, board] = await Promise.all([
      listTaskMessages(web.pool, task.id, afterSeq, pageSize + 1),
      readPage(param(req, 'board'), (page) => listTaskBoard(web.pool, c.member.workspace_id, task.id, page)),
    ]);
    const messages = pageBy(messageRows, (m) => [m.created_at, m.seq]);
    const files = await listMessageFiles(
      web.pool,
      c.member.workspace_id,
      messages.items.map((m) => m.id),
    );
    const here = { board: param(req, 'board'), messages: param(req, 'messages') };
    sendConsolePage(
      res,
      200,
      task.title,
      c,
      'tasks',
      taskView(c, task, here, { ...messages, files }, board),
      {
        wide: true,
        media: true,
      },
    );
  };
}

/** The media board's bytes, with the API's Range, ETag and download rules, behind the session instead of a key. */
function sendBytes(
  web: BrowserContext,
  objectStore: ObjectStore,
  send: WorkspaceDownload,
  idParam: string,
): RequestHandler {
  return async (req: Request, res: Response) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    try {
      await send(
        req,
        res,
        { pool: web.pool, objectStore },
        c.member.workspace_id,
        String(req.params[idParam]),
      );
    } catch (error) {
      if (!(error instanceof AppError) || res.headersSent) throw error;
      sendConsoleError(res, c, error.status, 'Not available', error.message);
    }
  };
}

/** GET /console/:memberId/videos/:videoId/file */
export const videoFile = (web: BrowserContext, objectStore: ObjectStore) =>
  sendBytes(web, objectStore, sendWorkspaceVideo, 'videoId');

/** GET /console/:memberId/files/:fileId/content */
export const fileContent = (web: BrowserContext, objectStore: ObjectStore) =>
  sendBytes(web, objectStore, sendWorkspaceFile, 'fileId');
