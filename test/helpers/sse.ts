import http from 'node:http';

import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Express } from 'express';

/** The app on a loopback port, for clients that need a real connection (streams, disconnects). */
export async function listenOnLoopback(app: Express): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

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
