import type { Request, Response } from 'express';

import { toMessageDto } from '../../shared/tasks/dto.ts';
import { type CursorKey, encodeCursor } from '../http/cursor.ts';
import type { OpenStreams } from './openStreams.ts';
import type { FeedReply, ReplySubscriber, TaskReplyFeed } from './taskReplyFeed.ts';

export type TaskStreamOptions = {
  /** How long a stream is held before `done` (spec: up to 60 seconds). */
  holdMs: number;
  /** Interval of comment lines that keep proxies from closing an idle stream. */
  heartbeatMs: number;
  /**
   * How long writes may stay blocked by a reader that does not read before the stream is ended; and
   * how long its ending may then wait to be flushed before the connection is cut.
   */
  stallMs: number;
};

export const defaultTaskStreamOptions: TaskStreamOptions = Object.freeze({
  holdMs: 60_000,
  heartbeatMs: 15_000,
  stallMs: 10_000,
});

/** The longest a task stream's connection lives: its hold, then at most `stallMs` to flush its end. */
export const taskStreamLifetimeMs = (options: TaskStreamOptions) => options.holdMs + options.stallMs;

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
 *
 * Backpressure: when the socket's buffer is full (a reader that does not keep up), the stream stops
 * writing (no replies, no heartbeats) and the feed passes it over; on 'drain' the feed reads the
 * replies after its cursor again. So a slow reader costs at most a buffer's worth and one event,
 * whatever is posted meanwhile. Blocked for `stallMs`, the stream is ended with `done`; an ending
 * not flushed `stallMs` later cuts the connection.
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
    openStreams: OpenStreams;
  },
): void {
  const { taskId, key, feed, options } = input;
  // The client left while the stream was being set up: its 'close' has fired already.
  if (res.destroyed) return;
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  // nginx and similar proxies buffer responses unless told not to.
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  input.openStreams.track('task', res);
  req.socket.setNoDelay(true);
  res.write(': stream open\n\n');

  let closed = false;
  let stall: NodeJS.Timeout | undefined;
  const subscriber: ReplySubscriber = {
    after: input.after,
    paused: false,
    // No res.cork() here: a corked chunked response buffers its chunks itself and answers false past
    // its own high-water mark while the socket has room, and then no 'drain' ever comes.
    deliver(replies) {
      for (const reply of replies) {
        if (closed || subscriber.paused) break;
        if (reply.row.seq <= subscriber.after) continue;
        subscriber.after = reply.row.seq;
        send(replyEvent(key, reply));
      }
    },
  };
  /** Writes `chunk` (always taken); a full buffer pauses the stream until the reader catches up. */
  function send(chunk: string): void {
    if (res.write(chunk)) return;
    subscriber.paused = true;
    stall = setTimeout(() => finish(true), options.stallMs);
    res.once('drain', onDrain);
  }
  function onDrain(): void {
    clearTimeout(stall);
    if (!closed) feed.resume(taskId, subscriber);
  }
  const unsubscribe = feed.subscribe(taskId, subscriber);
  const heartbeat = setInterval(() => {
    if (!closed && !subscriber.paused) send(': keep-alive\n\n');
  }, options.heartbeatMs);
  const hold = setTimeout(() => finish(true), options.holdMs);

  function finish(sendDone: boolean): void {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    clearTimeout(hold);
    clearTimeout(stall);
    unsubscribe();
    if (res.writableEnded || res.destroyed) return;
    // `done` goes after whatever is buffered, even for a stalled reader: it is small.
    if (sendDone) res.end(sseEvent('done', {}));
    else res.end();
    // A reader that never reads again would keep the connection, and its buffer, for good.
    const cut = setTimeout(() => res.destroy(), options.stallMs);
    res.once('finish', () => clearTimeout(cut));
    res.once('close', () => clearTimeout(cut));
  }
  // The client went away (or the server is closing the socket).
  res.on('close', () => finish(false));
  // The process is stopping: end now, as at the end of the hold, so the client reconnects elsewhere.
  const onShutdown = () => finish(true);
  if (input.shutdown.aborted) onShutdown();
  else input.shutdown.addEventListener('abort', onShutdown, { once: true });
  res.on('close', () => input.shutdown.removeEventListener('abort', onShutdown));
}
