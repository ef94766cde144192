import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync } from 'node:zlib';

import type { Express, Request, Response } from 'express';

// Below about a kilobyte the headers and the encoder's framing eat what compression saves.
const threshold = 1024;
const compressible = /^(text\/html|text\/css|application\/json|application\/[\w.+-]+\+json)\b/;
// Past this, encoding takes over a millisecond: it runs on libuv's thread pool, not the event loop.
const inlineLimit = 64 * 1024;
// Brotli's quality 11 costs ~50× quality 5 for a few per cent: pages are made per request.
const brotliOptions = { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } };

/**
 * What `res.send` is given, compressed when the client accepts br or gzip and the body is HTML, CSS
 * or JSON of a size worth it. Bodies sent whole only: streams (SSE, downloads, which are often
 * compressed already) are written with res.write/pipe and never pass here. The encoded bytes go on
 * to Express's own send, so its ETag is the encoded body's (one per encoding, as it should be) and
 * its If-None-Match check still answers 304.
 */
function encoded(req: Request, res: Response, body: unknown, send: (body?: unknown) => Response): Response {
  const encoding = chosenEncoding(req, res, body);
  if (encoding === undefined) return send(body);
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : (body as Buffer);
  if (bytes.length <= inlineLimit) {
    return send(encoding === 'br' ? brotliCompressSync(bytes, brotliOptions) : gzipSync(bytes));
  }
  const done = (error: Error | null, out: Buffer) => {
    if (error === null) {
      send(out);
      return;
    }
    res.removeHeader('Content-Encoding');
    send(bytes);
  };
  if (encoding === 'br') brotliCompress(bytes, brotliOptions, done);
  else gzip(bytes, done);
  return res;
}

/** br or gzip when `body` is worth compressing for this client (headers set), else undefined. */
function chosenEncoding(req: Request, res: Response, body: unknown): 'br' | 'gzip' | undefined {
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return undefined;
  if (typeof body === 'string' && !res.get('Content-Type')) res.type('html');
  const type = res.get('Content-Type') ?? '';
  if (!compressible.test(type) || res.get('Content-Encoding')) return undefined;
  const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
  if (length < threshold) return undefined;
  res.vary('Accept-Encoding');
  if (/\bno-transform\b/.test(res.get('Cache-Control') ?? '')) return undefined;
  const encoding = req.acceptsEncodings('br', 'gzip');
  if (encoding !== 'br' && encoding !== 'gzip') return undefined;
  // Express adds the charset to a string's type; for a Buffer that is ours to keep.
  if (typeof body === 'string' && !/charset=/i.test(type)) res.set('Content-Type', `${type}; charset=utf-8`);
  res.set('Content-Encoding', encoding);
  return encoding;
}

/** Compresses HTML, CSS and JSON answers for clients that accept it (Vary: Accept-Encoding). */
export function installCompression(app: Express): void {
  app.use((req, res, next) => {
    const send = res.send.bind(res);
    res.send = (body?: unknown) => encoded(req, res, body, send);
    next();
  });
}
