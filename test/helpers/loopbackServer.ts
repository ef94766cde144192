import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type LoopbackServer = {
  /** Lets a test watch the server side of a connection (its responses, their buffers). */
  server: http.Server;
  port: number;
  /** http://127.0.0.1:{port} */
  origin: string;
  /** How many requests have reached it. */
  readonly requests: number;
  /** Stops the server, ending its open connections (answers it never sent included). */
  close(): Promise<void>;
};

/**
 * A request listener (the app, a stand-in webhook receiver) on 127.0.0.1 at a free port, for clients
 * that need a real connection (streams, disconnects, outbound calls from the worker).
 */
export async function listenOnLoopback(listener: http.RequestListener): Promise<LoopbackServer> {
  const server = http.createServer(listener);
  let requests = 0;
  server.on('request', () => (requests += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    origin: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
