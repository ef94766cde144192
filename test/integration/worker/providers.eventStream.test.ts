import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  APIConnectionError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  RateLimitError,
} from 'openai';

import { eventParser, eventStreamTarget, postEventStream } from '../../../worker/providers/eventStream.ts';
import { thrown } from '../../helpers/thrown.ts';

/** What the server does with the next request, by its body's `behave`. */
type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const handlers: Record<string, Handler> = {
  // Pieces that split a CRLF, a field and an event across writes, a comment, a two-line data.
  split: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const pieces = [': keep-alive\r\n\r', '\ndata: {"n":', '1}\r\n\r\nda', 'ta: {"n":2}\n\ndata: {"n":\ndata: 3}\n\n', 'data: [DONE]\n\n'];
    let i = 0;
    const next = () => {
      if (i === pieces.length) return res.end();
      res.write(pieces[i++]);
      setTimeout(next, 2);
    };
    next();
  },
  // As providers answer: the sentinel and the answer's end in one write.
  whole: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"n":1}\n\ndata: [DONE]\n\n');
  },
  errorEvent: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"n":1}\n\nevent: error\ndata: {"error":{"message":"overloaded","code":529}}\n\n');
  },
  errorPayload: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"error":{"message":"upstream fell over"}}\n\n');
  },
  malformed: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"n":\n\n');
  },
  limited: (_req, res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
    res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
  },
  denied: (_req, res) => {
    res.writeHead(401, { 'content-type': 'text/plain' });
    res.end('no key');
  },
  // Headers and one event, then the connection goes: the answer is cut part way.
  drop: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"n":1}\n\n');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  // The race a kept-alive pool loses: the server lets the connection go as a call arrives on it.
  staleOnReuse: (req, res) => {
    if ((requestsOn.get(req.socket) ?? 0) > 1) return req.socket.destroy();
    handlers.whole!(req, res);
  },
  // An error answer whose body the connection drops part way.
  errorDrop: (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'content-length': '200' });
    res.write('{"error":');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  // Never answers: the caller's signal must end it, and the server must see the connection go.
  hang: (req) => {
    req.socket.once('close', () => closedHangs.push(Date.now()));
  },
  // The answer ends without the completion sentinel.
  noSentinel: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"n":1}\n\ndata: {"n":2}');
  },
};
const closedHangs: number[] = [];
const seenAuthorization: (string | undefined)[] = [];
const connections = new Set<object>();
const requestsOn = new WeakMap<object, number>();
let server: http.Server;
let baseUrl: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    connections.add(req.socket);
    requestsOn.set(req.socket, (requestsOn.get(req.socket) ?? 0) + 1);
    seenAuthorization.push(req.headers.authorization);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (piece: string) => (body += piece));
    req.on('end', () => handlers[(JSON.parse(body) as { behave: string }).behave]!(req, res));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const target = () => eventStreamTarget(baseUrl, 'sk-test', '/chat/completions');

async function collect(behave: string, signal = new AbortController().signal, t = target()) {
  const seen: unknown[] = [];
  await postEventStream(t, JSON.stringify({ behave }), signal, (value) => seen.push(value));
  return seen;
}

describe('the streamed provider client (eventStream.ts)', () => {
  it('reads events split anywhere across pieces, joins data lines, skips comments, stops at [DONE]', async () => {
    expect(await collect('split')).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(seenAuthorization.at(-1)).toBe('Bearer sk-test');
  });

  it('takes an answer that ends without the sentinel as complete, flushing its last event', async () => {
    expect(await collect('noSentinel')).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('reuses one kept-alive connection for calls one after another', async () => {
    const t = target();
    const before = connections.size;
    for (let i = 0; i < 5; i++) expect(await collect('whole', undefined, t)).toEqual([{ n: 1 }]);
    expect(connections.size - before).toBe(1);
  });

  it('sends a call again on a fresh connection when the server drops the kept-alive one it went out on', async () => {
    const t = target();
    const before = connections.size;
    expect(await collect('staleOnReuse', undefined, t)).toEqual([{ n: 1 }]);
    expect(await collect('staleOnReuse', undefined, t)).toEqual([{ n: 1 }]);
    expect(connections.size - before).toBe(2);
  });

  it('fails as the SDK does: error events and payloads as APIError without a status, bad JSON as SyntaxError', async () => {
    const event = await thrown(collect('errorEvent'));
    expect(event).toBeInstanceOf(APIError);
    expect((event as APIError).status).toBeUndefined();
    expect((event as APIError).error).toEqual({ message: 'overloaded', code: 529 });
    const payload = await thrown(collect('errorPayload'));
    expect((payload as APIError).error).toEqual({ message: 'upstream fell over' });
    expect(await thrown(collect('malformed'))).toBeInstanceOf(SyntaxError);
  });

  it('fails a status outside 2xx as the SDK class of that status, with the body and headers', async () => {
    const limited = await thrown(collect('limited'));
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).status).toBe(429);
    expect((limited as RateLimitError).headers?.get('retry-after')).toBe('7');
    expect((limited as RateLimitError).error).toMatchObject({ message: 'slow down' });
    const denied = await thrown(collect('denied'));
    expect(denied).toBeInstanceOf(AuthenticationError);
    expect((denied as APIError).message).toContain('no key');
  });

  it('fails an answer the provider cut part way as a connection error, after what arrived', async () => {
    const seen: unknown[] = [];
    const error = await thrown(
      postEventStream(target(), JSON.stringify({ behave: 'drop' }), new AbortController().signal, (v) =>
        seen.push(v),
      ),
    );
    expect(seen).toEqual([{ n: 1 }]);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(((error as Error).cause as { code?: string }).code).toMatch(/ECONNRESET|ERR_STREAM_PREMATURE_CLOSE/);
  });

  it('fails an error answer cut part way at once, as a connection error, not at the caller’s deadline', async () => {
    const error = await thrown(collect('errorDrop'));
    expect(error).toBeInstanceOf(APIConnectionError);
  });

  it('ends a call at its signal, closing the connection the provider holds', async () => {
    const controller = new AbortController();
    const closedBefore = closedHangs.length;
    const pending = thrown(collect('hang', controller.signal));
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    expect(await pending).toBeInstanceOf(APIUserAbortError);
    const deadline = Date.now() + 5_000;
    while (closedHangs.length === closedBefore && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(closedHangs.length).toBe(closedBefore + 1);
  });

  it('rejects what onJson throws and closes the answer', async () => {
    const error = await thrown(
      postEventStream(target(), JSON.stringify({ behave: 'split' }), new AbortController().signal, () => {
        throw new Error('not the protocol');
      }),
    );
    expect((error as Error).message).toBe('not the protocol');
  });

  it('parses CR, LF and CRLF line ends alike', () => {
    const got: string[] = [];
    const feed = eventParser((data) => got.push(data));
    feed('data: a\rdata: b\r\r');
    feed('data: c\n\ndata: d\r');
    feed('\n\r\n');
    expect(got).toEqual(['a\nb', 'c', 'd']);
  });
});
