import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type BearerProxy = { port: number; origin: string; close(): Promise<void> };

/**
 * A loopback forwarder to `target` that adds `Authorization: Bearer <secret>` to every request, for
 * clients that cannot send a header of their own (the Inspector CLI 0.15 and the conformance runner
 * have no option for one), as a gateway in front of them would. Requests and answers stream through
 * unchanged otherwise (event streams included). `port` 0 takes a free one.
 */
export async function bearerProxy(target: string, secret: string, port = 0): Promise<BearerProxy> {
  const origin = new URL(target);
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      {
        host: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: origin.host, authorization: `Bearer ${secret}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const listening = (server.address() as AddressInfo).port;
  return {
    port: listening,
    origin: `http://127.0.0.1:${listening}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
