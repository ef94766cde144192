import type http from 'node:http';
import type { Socket } from 'node:net';

/**
 * Lets a stopping server close every connection as soon as it has no request in flight. Node's
 * closeIdleConnections skips a connection that has not sent a request yet (a client's warm pool
 * socket, or one whose request was abandoned before it was written): those would hold
 * `server.close()` until the headers timeout, past a platform's grace period after SIGTERM.
 * Answers still to come say `Connection: close`, so clients do not reuse a closing connection.
 */
export function trackConnections(server: http.Server): { closeWhenIdle(): void } {
  const inFlight = new Map<Socket, Set<http.ServerResponse>>();
  let closing = false;
  const sayClose = (res: http.ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  };
  server.on('connection', (socket: Socket) => {
    inFlight.set(socket, new Set());
    socket.once('close', () => inFlight.delete(socket));
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const responses = inFlight.get(socket) ?? new Set();
    inFlight.set(socket, responses);
    responses.add(res);
    if (closing) sayClose(res);
    res.once('close', () => {
      responses.delete(res);
      if (closing && responses.size === 0) socket.destroySoon();
    });
  });
  return {
    closeWhenIdle() {
      closing = true;
      for (const [socket, responses] of inFlight) {
        if (responses.size === 0) socket.destroySoon();
        else responses.forEach(sayClose);
      }
    },
  };
}
