import http from 'node:http';

export type S3Proxy = { endpoint: string; requests: number; close(): Promise<void> };

/**
 * A pass-through proxy in front of an S3 server: the "public endpoint" callers outside the machine
 * would reach. Headers pass unchanged, Host included, so presigned signatures hold upstream.
 * `intercept` may answer a request itself (true) instead: a fault to inject.
 */
export function startS3Proxy(
  target: string,
  intercept?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean,
): Promise<S3Proxy> {
  const upstream = new URL(target);
  const proxy = { endpoint: '', requests: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    proxy.requests++;
    if (intercept?.(req, res)) return;
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      proxy.endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      proxy.close = () =>
        new Promise<void>((done) => {
          server.closeAllConnections();
          server.close(() => done());
        });
      resolve(proxy);
    }),
  );
}
