import type { Request, RequestHandler, Response } from 'express';

import { listTaskMessages } from '../../shared/db/queries/taskMessages.ts';
import { findWorkspaceTask, listTaskBoard, listWorkspaceTasks } from '../../shared/db/queries/tasks.ts';
import { AppError } from '../../shared/errors/appError.ts';
import type { AppDeps } from '../deps.ts';
import type { OauthServer } from '../oauth/oauthServer.ts';
import { sendErrorPage, sendPage } from '../pages/html.ts';
import { sendWorkspaceFile } from '../routes/files/downloadFile.ts';
import { sendWorkspaceVideo } from '../routes/videos/downloadVideo.ts';
import { consoleContext, param } from './context.ts';
import { consoleFrame } from './layout.ts';
import { decodePageCursor, pageOf, pageSize } from './pageCursor.ts';
import { tasksView, taskView } from './tasksViews.ts';

const boardLimit = 200;

/** GET /console/:memberId/tasks */
export function showTasks(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(s, req, res);
    if (!c) return;
    const rows = await listWorkspaceTasks(s.pool, c.member.workspace_id, {
      before: decodePageCursor(param(req, 'cursor')),
      limit: pageSize + 1,
    });
    const { items: tasks, next } = pageOf(rows);
    sendPage(res, 200, 'Tasks', consoleFrame(c, 'tasks', tasksView(c, tasks, next)), { wide: true });
  };
}

/** GET /console/:memberId/tasks/:taskId: its messages (paged by sequence number) and its media board. */
export function showTask(s: OauthServer): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(s, req, res);
    if (!c) return;
    const task = await findWorkspaceTask(s.pool, c.member.workspace_id, String(req.params.taskId));
    if (!task) return sendErrorPage(res, 404, 'Not found', 'No such task in this workspace.');
    const after = /^\d{1,15}$/.test(param(req, 'after')) ? Number(param(req, 'after')) : 0;
    const [rows, board] = await Promise.all([
      listTaskMessages(s.pool, task.id, after, pageSize + 1),
      listTaskBoard(s.pool, c.member.workspace_id, task.id, boardLimit),
    ]);
    const messages = rows.slice(0, pageSize);
    const next = rows.length > pageSize ? messages.at(-1)!.seq : null;
    sendPage(res, 200, task.title, consoleFrame(c, 'tasks', taskView(c, task, messages, next, board)), {
      wide: true,
      media: true,
    });
  };
}

type Sender = typeof sendWorkspaceVideo;

/** The media board's bytes, with the API's Range, ETag and download rules, behind the session instead of a key. */
function sendBytes(s: OauthServer, deps: AppDeps, send: Sender, idParam: string): RequestHandler {
  return async (req: Request, res: Response) => {
    const c = await consoleContext(s, req, res);
    if (!c) return;
    try {
      await send(req, res, deps, c.member.workspace_id, String(req.params[idParam]));
    } catch (error) {
      if (!(error instanceof AppError) || res.headersSent) throw error;
      sendErrorPage(res, error.status, 'Not available', error.message);
    }
  };
}

/** GET /console/:memberId/videos/:videoId/file */
export const videoFile = (s: OauthServer, deps: AppDeps) => sendBytes(s, deps, sendWorkspaceVideo, 'videoId');

/** GET /console/:memberId/files/:fileId/content */
export const fileContent = (s: OauthServer, deps: AppDeps) => sendBytes(s, deps, sendWorkspaceFile, 'fileId');
