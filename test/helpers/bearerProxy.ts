import http from 'node:http';

import { listenOnLoopback, type LoopbackServer } from './loopbackServer.ts';

/**
 * A loopback forwarder to `target` that adds `Authorization: Bearer <secret>` to every request, for
 * clients that cannot send a header of their own (the Inspector CLI 0.15 and the conformance runner
 * have no option for one), as a gateway in front of them would. Requests and answers stream through
 * unchanged otherwise (event streams included).
 */
export function bearerProxy(target: string, secret: string): Promise<LoopbackServer> {
  const origin = new URL(target);
  return listenOnLoopback((req, res) => {
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
}
