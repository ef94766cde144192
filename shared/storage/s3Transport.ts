import http from 'node:http';
import https from 'node:https';

/** What the minio client needs of `node:http` to send a request. */
export type Transport = Pick<typeof http, 'request'>;

// The statuses minio's request layer retries (minio-js internal/request.ts). For these it throws a
// bare Error that has lost S3's error code, without reading the answer, whose socket then never
// returns to the pool, and disableRetry does not change that. They are read here instead.
const retriedStatuses = new Set([408, 429, 499, 500, 502, 503, 504, 520]);

// An S3 error document is a few hundred bytes; a proxy's HTML page may be more, and is not kept.
const maxErrorBytes = 64 * 1024;

const codeByStatus: Record<number, string> = {
  408: 'RequestTimeout',
  429: 'SlowDown',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/**
 * An answer minio would mishandle, read to its end and turned into the error minio gives for any
 * other S3 error (name S3Error, S3's <Code>): from the document when it has one, else from the
 * status (HEAD answers have no body), else none (a gateway's page: an answer the client cannot read).
 */
function s3ErrorOf(res: http.IncomingMessage, body: string): Error {
  const fromBody = /<Error>[\s\S]*?<Code>([^<]{1,100})<\/Code>/.exec(body)?.[1];
  const code = fromBody ?? codeByStatus[res.statusCode!];
  const message = /<Message>([^<]{0,500})<\/Message>/.exec(body)?.[1] ?? `S3 answered HTTP ${res.statusCode}`;
  return Object.assign(new Error(message), { name: 'S3Error', code, status: res.statusCode });
}

/**
 * `http` or `https` as the minio client should have used them:
 * - a request may go `idleMs` without a byte moving before S3's answer begins: a server that stopped
 *   answering (paused, blackholed by a network fault) fails the call with ETIMEDOUT instead of
 *   holding it for the kernel's minutes. Once the answer's headers arrive the bound is lifted: a
 *   download read slowly (a slow client downstream) is idle by our choice, not the server's.
 * - a 5xx (or 408, 429) answer is read to its end, so its connection can be reused, and fails the
 *   request with S3's error code (see retriedStatuses).
 */
export function s3Transport(protocol: 'http:' | 'https:', idleMs: number): Transport {
  const base = protocol === 'https:' ? https : http;
  const request = (options: http.RequestOptions, onResponse?: (res: http.IncomingMessage) => void) => {
    const req = base.request(options, (res) => {
      req.setTimeout(0);
      if (!retriedStatuses.has(res.statusCode!)) {
        onResponse?.(res);
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < maxErrorBytes) body += chunk;
      });
      res.on('end', () => req.emit('error', s3ErrorOf(res, body)));
      res.on('error', (error) => req.emit('error', error));
    });
    req.setTimeout(idleMs, () => {
      const error = Object.assign(new Error(`S3 sent nothing for ${idleMs} ms`), { code: 'ETIMEDOUT' });
      req.destroy(error);
    });
    return req;
  };
  return { request: request as typeof http.request };
}
