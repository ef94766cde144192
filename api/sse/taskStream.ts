import type { Request, Response } from 'express';

import { toMessageDto } from '../../shared/tasks/dto.ts';
import { type CursorKey, encodeCursor } from '../cursor.ts';
import type { FeedReply, TaskReplyFeed } from './taskReplyFeed.ts';

export type TaskStreamOptions = {
  /** How long a stream is held before `done` (spec: up to 60 seconds). */
  holdMs: number;
  /** Interval of comment lines that keep proxies from closing an idle stream. */
  heartbeatMs: number;
};

export const defaultTaskStreamOptions: TaskStreamOptions = Object.freeze({
  holdMs: 60_000,
  heartbeatMs: 15_000,
});

/** One server-sent event; JSON never contains a raw newline, so `data` is a single line. */
function sseEvent(event: string, data: unknown, id?: string): string {
  return `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** The `message` event of a reply, rendered once for all the streams of its task (see FeedReply). */
function replyEvent(key: CursorKey, reply: FeedReply): string {
  reply.event ??= sseEvent(
    'message',
    toMessageDto(reply.row),
    encodeCursor(key, { purpose: 'stream', taskId: reply.row.task_id, seq: reply.row.seq }),
  );
  return reply.event;
}

/**
 * Serves one task stream: a `message` event per assistant reply numbered after `after` (its id is the
 * cursor to reconnect with), a comment heartbeat, and `done` when the hold time ends. Per stream the
 * process keeps a subscriber in the feed and two timers; no database connection, no polling.
 * Replies arrive in number order and a reply is sent only if it is above the last one sent, so a
 * reconnect with the last id neither loses nor repeats one.
 */
export function serveTaskStream(
  req: Request,
  res: Response,
  input: {
    feed: TaskReplyFeed;
    key: CursorKey;
    taskId: string;
    after: number;
    options: TaskStreamOptions;
    shutdown: AbortSignal;
  },
): void {
  const { taskId, key } = input;
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  // nginx and similar proxies buffer responses unless told not to.
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  req.socket.setNoDelay(true);
  res.write(': stream open\n\n');

  let closed = false;
  const subscriber = {
    after: input.after,
    deliver(replies: readonly FeedReply[]) {
      if (closed) return;
      let chunk = '';
      for (const reply of replies) {
        if (reply.row.seq <= subscriber.after) continue;
        subscriber.after = reply.row.seq;
        chunk += replyEvent(key, reply);
      }
      if (chunk !== '') res.write(chunk);
    },
  };
  const unsubscribe = input.feed.subscribe(taskId, subscriber);
  const heartbeat = setInterval(() => {
    if (!closed) res.write(': keep-alive\n\n');
  }, input.options.heartbeatMs);
  const hold = setTimeout(() => finish(true), input.options.holdMs);

  function finish(sendDone: boolean): void {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    clearTimeout(hold);
    unsubscribe();
    if (res.writableEnded) return;
    if (sendDone) res.end(sseEvent('done', {}));
    else res.end();
  }
  // The client went away (or the server is closing the socket).
  res.on('close', () => finish(false));
  // The process is stopping: end now, as at the end of the hold, so the client reconnects elsewhere.
  const onShutdown = () => finish(true);
  if (input.shutdown.aborted) onShutdown();
  else input.shutdown.addEventListener('abort', onShutdown, { once: true });
  res.on('close', () => input.shutdown.removeEventListener('abort', onShutdown));
}
