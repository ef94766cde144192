import type { RequestHandler } from 'express';

import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { found } from '../../../shared/errors/appError.ts';
import type { AppDeps } from '../../deps.ts';
import { decodeCursor } from '../../http/cursor.ts';
import { releaseWhenClosed } from '../../sse/releaseWhenClosed.ts';
import { defaultTaskStreamOptions, serveTaskStream, taskStreamLifetimeMs } from '../../sse/taskStream.ts';

/**
 * GET /tasks/{taskId}/stream: replies after the cursor, or after the task's latest message when
 * there is none ("from now"). An EventSource's automatic reconnect sends the last id it saw as
 * Last-Event-ID, which wins over the cursor still in its URL. The stream takes one of its
 * workspace's stream leases first: beyond the limit it is answered rate_limited before it starts.
 */
export function streamTask(deps: AppDeps): RequestHandler {
  const { pool } = deps;
  const options = { ...defaultTaskStreamOptions, ...deps.taskStream };
  const feed = deps.taskReplyFeed;
  return async (req, res) => {
    const workspaceId = req.principal!.workspaceId;
    const taskId = req.params.taskId as string;
    const task = found(await findWorkspaceTask(pool, workspaceId, taskId), 'task', taskId);
    const raw =
      req.get('last-event-id') ?? (req.query.cursor === undefined ? undefined : String(req.query.cursor));
    const key = await deps.cursorKeys.get();
    const after = raw === undefined ? task.last_message_seq : decodeCursor(key, raw, 'stream', task.id);
    const lease = await deps.streamLeases.acquire(workspaceId, taskStreamLifetimeMs(options));
    releaseWhenClosed(res, lease);
    const { shutdown, openStreams } = deps;
    serveTaskStream(req, res, { feed, key, taskId: task.id, after, options, shutdown, openStreams });
  };
}
