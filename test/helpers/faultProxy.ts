import net from 'node:net';

export type FaultProxy = {
  /** The server's URL through the proxy: the same server, reached via this process. */
  url: string;
  /** Connections made through the proxy so far (a reconnect after `restore` counts). */
  readonly connections: number;
  /**
   * The server goes away for everyone behind the proxy, as in a restart: every open connection is
   * cut mid-stream and every new one is closed as soon as it opens, until `restore`.
   */
  cut(): void;
  /** The server is back: new connections reach it again. */
  restore(): void;
  close(): Promise<void>;
};

/**
 * A TCP proxy in front of a server the processes under test use (PostgreSQL, an S3 server), so a
 * test can take it away from them at an exact point and give it back, while the test's own clients
 * (outside the proxy) keep reading and asserting.
 */
export async function startFaultProxy(serverUrl: string): Promise<FaultProxy> {
  const upstream = new URL(serverUrl);
  const open = new Set<net.Socket>();
  let down = false;
  let connections = 0;
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    connections++;
    const server = net.connect(Number(upstream.port || 5432), upstream.hostname);
    open.add(client).add(server);
    const end = () => {
      client.destroy();
      server.destroy();
      open.delete(client);
      open.delete(server);
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    client.pipe(server).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(serverUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    get connections() {
      return connections;
    },
    cut: () => {
      down = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    restore: () => {
      down = false;
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
