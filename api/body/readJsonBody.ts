import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';

/**
 * Why a body could not be read; `type` follows body-parser's vocabulary, which bodyError maps to
 * the envelope. `abandoned`: the rest of the body was not read, so the connection must close.
 */
export class BodyReadError extends Error {
  readonly type: string;
  readonly abandoned: boolean;
  constructor(type: string, message: string, abandoned = false) {
    super(message);
    this.name = 'BodyReadError';
    this.type = type;
    this.abandoned = abandoned;
  }
}

/**
 * A compressed body may inflate to at most this many times its size on the wire (and never past the
 * operation's limit): JSON rarely compresses better than 20:1, a zip bomb does 1000:1.
 */
export const maxInflationRatio = 100;
// Below this much inflated text the ratio is not enforced: tiny bodies compress oddly well.
const ratioFloorBytes = 16 * 1024;

function decoderFor(encoding: string): Transform | null | undefined {
  switch (encoding) {
    case '':
    case 'identity':
      return null;
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return undefined;
  }
}

function charsetOf(contentType: string): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return match?.[1]?.toLowerCase();
}

/**
 * Reads a request body as UTF-8 JSON text, holding at most `limit` bytes of it, decompressed: the
 * wire bytes are counted as they arrive (a Content-Length over the limit is refused before anything
 * is read), the decompressed ones too, and a compressed body that inflates more than
 * maxInflationRatio times its wire size is refused as it inflates. Never buffers more than the limit.
 * @throws BodyReadError (entity.too.large, entity.inflation, encoding.unsupported, charset.unsupported,
 *   request.aborted, inflation.failed).
 */
export async function readJsonText(req: IncomingMessage, limit: number): Promise<string> {
  const charset = charsetOf(req.headers['content-type'] ?? '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new BodyReadError('charset.unsupported', `unsupported charset "${charset}"`);
  }
  const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder = decoderFor(encoding);
  if (decoder === undefined) {
    throw new BodyReadError('encoding.unsupported', `unsupported content encoding "${encoding}"`);
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit * (decoder ? maxInflationRatio : 1)) {
    throw new BodyReadError('entity.too.large', 'request entity too large', true);
  }
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let wire = 0;
    let inflated = 0;
    let settled = false;
    // Read or refused, the body's listeners go: left on the request, they would keep its chunks and
    // this promise's continuation alive until the connection's next request, long enough for the
    // young generation's collector to copy them into the old one on every POST.
    const settle = () => {
      settled = true;
      req.off('data', onWire);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', aborted);
    };
    const fail = (error: BodyReadError) => {
      if (settled) return;
      settle();
      req.unpipe();
      decoder?.destroy();
      // Whatever the client still sends is not read: the answer closes the connection.
      req.pause();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      inflated += chunk.length;
      if (inflated > limit)
        {return fail(new BodyReadError('entity.too.large', 'request entity too large', true));}
      if (decoder && inflated > ratioFloorBytes && inflated > wire * maxInflationRatio) {
        return fail(new BodyReadError('entity.inflation', 'the body inflates too much', true));
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (settled) return;
      settle();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onWire = (chunk: Buffer) => {
      wire += chunk.length;
      if (!decoder) onData(chunk);
    };
    // Node's parser delivers exactly Content-Length bytes; a client that leaves first closes the request early.
    const aborted = () => fail(new BodyReadError('request.aborted', 'request aborted', true));
    const onClose = () => {
      if (!req.complete) aborted();
    };
    req.on('data', onWire);
    req.once('close', onClose);
    req.once('error', aborted);
    if (decoder) {
      decoder.on('data', onData);
      decoder.once('end', onEnd);
      decoder.once('error', () => fail(new BodyReadError('inflation.failed', 'the body does not inflate')));
      req.pipe(decoder);
    } else {
      req.once('end', onEnd);
    }
  });
}
