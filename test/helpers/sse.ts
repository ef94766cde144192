import http from 'node:http';

import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * Reads a server-sent-event response with a spec-compliant parser. `onEvent` may return true to
 * stop reading (the connection is then aborted by the caller's controller).
 */
export async function readEvents(
  res: Response,
  onEvent?: (event: EventSourceMessage) => boolean | void,
): Promise<EventSourceMessage[]> {
  const events: EventSourceMessage[] = [];
  let stop = false;
  const parser = createParser({
    onEvent: (event) => {
      events.push(event);
      if (onEvent?.(event)) stop = true;
    },
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  while (!stop) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  if (stop) await reader.cancel().catch(() => {});
  return events;
}

export type RawSseEvent = { event: string; id: string | undefined; data: string };

/** A server-sent event response read over its own socket, whose reading the test can stop and restart. */
export type RawSse = {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body of a response that is not an event stream (an error envelope). */
  body: Promise<string>;
  events: RawSseEvent[];
  comments: string[];
  /** Stops reading: the socket's buffers fill up and the server's writes meet backpressure. */
  pause(): void;
  resume(): void;
  /** Resolves once an event matching `predicate` has arrived (rejects after `timeoutMs`). */
  waitFor(predicate: (e: RawSseEvent) => boolean, timeoutMs?: number): Promise<RawSseEvent>;
  /** Resolves when the connection is over: `complete` when the server ended the response. */
  ended: Promise<{ complete: boolean }>;
  close(): void;
};

/**
 * Opens a request with node:http on a socket of its own (no agent) and parses its event stream as
 * it is read. Unlike fetch, reading can be paused: the client then reads nothing from the socket.
 */
export function openRawSse(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawSse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      agent: false,
      method: options.method ?? 'GET',
      headers: { accept: 'text/event-stream', ...options.headers },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: RawSseEvent[] = [];
      const comments: string[] = [];
      const waiters = new Set<{
        predicate: (e: RawSseEvent) => boolean;
        resolve: (e: RawSseEvent) => void;
      }>();
      const isStream = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
      const parser = createParser({
        onEvent(message) {
          const event = { event: message.event ?? 'message', id: message.id, data: message.data };
          events.push(event);
          for (const waiter of [...waiters]) {
            if (waiter.predicate(event)) {
              waiters.delete(waiter);
              waiter.resolve(event);
            }
          }
        },
        onComment: (comment) => comments.push(comment),
      });
      const decoder = new TextDecoder();
      let text = '';
      res.on('data', (chunk: Buffer) => {
        const decoded = decoder.decode(chunk, { stream: true });
        if (isStream) parser.feed(decoded);
        else text += decoded;
      });
      res.on('error', () => {});
      const ended = new Promise<{ complete: boolean }>((done) => {
        res.on('end', () => done({ complete: true }));
        res.on('close', () => done({ complete: res.complete }));
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: ended.then(() => text),
        events,
        comments,
        pause: () => res.pause(),
        resume: () => res.resume(),
        waitFor(predicate, timeoutMs = 15_000) {
          const existing = events.find(predicate);
          if (existing) return Promise.resolve(existing);
          return new Promise((found, fail) => {
            const waiter = {
              predicate,
              resolve: (e: RawSseEvent) => {
                clearTimeout(timer);
                found(e);
              },
            };
            const timer = setTimeout(() => {
              waiters.delete(waiter);
              fail(new Error(`no matching SSE event within ${timeoutMs} ms`));
            }, timeoutMs);
            waiters.add(waiter);
          });
        },
        ended,
        close: () => req.destroy(),
      });
    });
    req.end(options.body);
  });
}

/**
 * Resolves with the server side of the next request whose URL starts with `pathPrefix`, and records
 * the most bytes it ever held buffered for its client (checked after every write: the buffer grows
 * only by writes).
 */
export function nextServerResponse(
  server: http.Server,
  pathPrefix: string,
): Promise<{ res: http.ServerResponse; maxBuffered(): number }> {
  return new Promise((resolve) => {
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
      // The app, listening first, may already be routing it with a mount path cut off req.url.
      const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '';
      if (!url.startsWith(pathPrefix)) return;
      server.off('request', onRequest);
      let max = 0;
      const watch =
        <A extends unknown[], R>(fn: (...args: A) => R) =>
        (...args: A): R => {
          const result = fn(...args);
          max = Math.max(max, res.writableLength);
          return result;
        };
      res.write = watch(res.write.bind(res) as (...args: unknown[]) => boolean) as typeof res.write;
      res.end = watch(res.end.bind(res) as (...args: unknown[]) => http.ServerResponse) as typeof res.end;
      resolve({ res, maxBuffered: () => max });
    };
    server.on('request', onRequest);
  });
}
