import net from 'node:net';

export type TcpProxy = {
  /** `target`'s URL with its host and port replaced by the proxy's. */
  url(target: string): string;
  /** Drops every connection and refuses new ones, as a server that went away. */
  cut(): Promise<void>;
  /** Accepts connections again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
};

/** A loopback TCP pass-through to `port`, whose far side can be taken away and brought back. */
export async function startTcpProxy(port: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (at: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(at, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const own = (server.address() as net.AddressInfo).port;
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (server.listening) server.close(() => resolve());
      else resolve();
    });
  return {
    url: (target) => {
      const url = new URL(target);
      url.hostname = '127.0.0.1';
      url.port = String(own);
      return url.toString();
    },
    cut: stop,
    restore: () => listen(own),
    close: stop,
  };
}
