import http from 'node:http';
import https from 'node:https';

/** What the minio client needs of `node:http` to send a request. */
export type Transport = Pick<typeof http, 'request'>;

/**
 * `http` or `https` with a bound on how long a request may go without a byte moving before S3's
 * answer begins: a server that stopped answering (paused, blackholed by a network fault) fails the
 * call with ETIMEDOUT instead of holding it for the kernel's minutes. Once the answer's headers
 * arrive the bound is lifted: a download read slowly (a slow client downstream, backpressure) is
 * idle by our choice, not the server's.
 */
export function answerTimeoutTransport(protocol: 'http:' | 'https:', idleMs: number): Transport {
  const base = protocol === 'https:' ? https : http;
  const request = (options: http.RequestOptions, onResponse?: (res: http.IncomingMessage) => void) => {
    const req = base.request(options, (res) => {
      req.setTimeout(0);
      onResponse?.(res);
    });
    req.setTimeout(idleMs, () => {
      const error = Object.assign(new Error(`S3 sent nothing for ${idleMs} ms`), { code: 'ETIMEDOUT' });
      req.destroy(error);
    });
    return req;
  };
  return { request: request as typeof http.request };
}
