import http from 'node:http';
import type net from 'node:net';
import zlib from 'node:zlib';

import { afterEach, describe, expect, it } from '@jest/globals';

import { readJsonText } from '../../api/body/readJsonBody.ts';

let server: http.Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

const events = ['data', 'end', 'close', 'error'] as const;
const listeners = (req: http.IncomingMessage) => events.map((e) => req.listenerCount(e));

type Seen = { text?: string; error?: string; before: number[]; after: number[] };

/** A server that reads each body with readJsonText and reports the request's listeners around it. */
async function serve(limit: number): Promise<{ port: number; seen: Promise<Seen> }> {
  let report!: (seen: Seen) => void;
  const seen = new Promise<Seen>((resolve) => (report = resolve));
  server = http.createServer((req, res) => {
    const before = listeners(req);
    readJsonText(req, limit)
      .then(
        (text) => report({ text, before, after: listeners(req) }),
        (error: Error) => report({ error: (error as { type?: string }).type, before, after: listeners(req) }),
      )
      .finally(() => res.end());
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, seen };
}

function post(port: number, body: Buffer | ReadableStream, headers: Record<string, string> = {}) {
  return fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    duplex: 'half',
  } as RequestInit).then((res) => res.arrayBuffer());
}

// Left behind, the body reader's listeners keep its chunks and the waiting handler alive until the
// connection's next request: every POST's garbage then outlives a young-generation collection.
describe('readJsonText leaves the request as it found it', () => {
  it('after reading a plain body', async () => {
    const { port, seen } = await serve(1024);
    await post(port, Buffer.from('{"a":1}'));
    const result = await seen;
    expect(result.text).toBe('{"a":1}');
    expect(result.after).toEqual(result.before);
  });

  it('after reading a compressed body', async () => {
    const { port, seen } = await serve(1024);
    await post(port, zlib.gzipSync('{"b":2}'), { 'content-encoding': 'gzip' });
    const result = await seen;
    expect(result.text).toBe('{"b":2}');
    expect(result.after).toEqual(result.before);
  });

  it('after refusing a body over the limit as it streams in', async () => {
    const { port, seen } = await serve(8);
    // No Content-Length (chunked): the limit is only found while reading.
    const body = new Blob([`{"c":"${'x'.repeat(64)}"}`]).stream();
    await post(port, body).catch(() => undefined);
    const result = await seen;
    expect(result.error).toBe('entity.too.large');
    expect(result.after).toEqual(result.before);
  });
});
