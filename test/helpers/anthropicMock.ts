import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How the mock answers the next message request. */
export type MessageBehavior =
  /**
   * An answer; `cacheRead` / `cacheWrite` report prompt tokens read from or written to the prompt cache,
   * `stopSequence` that the answer ended at that one of the request's stop sequences.
   */
  | { kind: 'ok'; text?: string; cacheRead?: number; cacheWrite?: number; stopSequence?: string }
  /** An HTTP error with Anthropic's error body; `retryAfter` sets the header. */
  | { kind: 'status'; status: number; type: string; message: string; retryAfter?: string }
  /** Accepts the request and never answers (a stuck provider). */
  | { kind: 'stall' }
  /** Closes the connection without an answer. */
  | { kind: 'drop' }
  /** Streams `words` words, then holds the stream open until the client goes away (a stalled answer). */
  | { kind: 'hang'; words: number }
  /** Streams `words` words, then an `error` event (Anthropic's overloaded or api errors mid-answer). */
  | { kind: 'streamError'; words: number; type: string; message: string }
  /**
   * A healthy provider that writes slowly: one `tok ` every `tokenMs` up to the request's
   * `max_tokens` (then stop_reason `max_tokens`), or until the client goes away.
   */
  | { kind: 'slow'; tokenMs: number };

export type AnthropicMock = {
  baseUrl: string;
  apiKey: string;
  /** Every request's body, in arrival order. */
  requests: Record<string, unknown>[];
  /** Per `slow` answer, in arrival order: the tokens it wrote before it ended or its client went away. */
  sent: number[];
  queue(...behaviors: MessageBehavior[]): void;
  close(): Promise<void>;
};

export function anthropicReply(prompt: string): string {
  return `Claude mock reply to: ${prompt}`;
}

/** A message's text, whether its content is a string or an array of text blocks (with cache_control). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((block) => String((block as { text?: unknown }).text ?? '')).join('');
}

const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** A `slow` answer: `tok ` every `tokenMs` up to `max_tokens`, its count kept at the end of `sent`. */
async function slowMessage(
  res: http.ServerResponse,
  body: Record<string, unknown>,
  tokenMs: number,
  sent: number[],
): Promise<void> {
  const budget = Number(body.max_tokens);
  const index = sent.push(0) - 1;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(
    event('message_start', {
      message: {
        id: 'msg_slow',
        type: 'message',
        role: 'assistant',
        model: String(body.model),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      },
    }),
  );
  res.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
  while (sent[index]! < budget) {
    await new Promise((resolve) => setTimeout(resolve, tokenMs));
    if (res.destroyed) return;
    res.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tok ' } }));
    sent[index]! += 1;
  }
  res.write(event('content_block_stop', { index: 0 }));
  res.write(
    event('message_delta', {
      delta: { stop_reason: 'max_tokens', stop_sequence: null },
      usage: { output_tokens: budget },
    }),
  );
  res.end(event('message_stop', {}));
}

/**
 * A local server speaking the Anthropic Messages API (POST /v1/messages, streamed as the API streams
 * it: message_start, content blocks, message_delta with usage, message_stop), with scriptable
 * failures and every request recorded. Loopback only.
 */
export async function startAnthropicMock(apiKey = 'sk-ant-mock-secret-0123456789'): Promise<AnthropicMock> {
  const requests: Record<string, unknown>[] = [];
  const sent: number[] = [];
  const behaviors: MessageBehavior[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    requests.push(body);
    const fail = (status: number, type: string, message: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify({ type: 'error', error: { type, message } }));
    };
    if (req.method !== 'POST' || req.url !== '/v1/messages') {
      return fail(404, 'not_found_error', 'no such route');
    }
    // The API takes the key as x-api-key or (as the current SDK sends it) a bearer token.
    const given = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '');
    if (given !== apiKey) return fail(401, 'authentication_error', 'invalid x-api-key');
    if (!req.headers['anthropic-version']) {
      return fail(400, 'invalid_request_error', 'anthropic-version missing');
    }
    const behavior = behaviors.shift() ?? { kind: 'ok' };
    if (behavior.kind === 'stall') return;
    if (behavior.kind === 'drop') return req.socket.destroy();
    if (behavior.kind === 'status') {
      const headers: Record<string, string> = behavior.retryAfter
        ? { 'retry-after': behavior.retryAfter }
        : {};
      return fail(behavior.status, behavior.type, behavior.message, headers);
    }
    if (behavior.kind === 'slow') return slowMessage(res, body, behavior.tokenMs, sent);
    const messages = body.messages as { role: string; content: unknown }[];
    const prompt = contentText(messages.filter((m) => m.role === 'user').at(-1)?.content);
    const pieces = (behavior.kind === 'ok' && behavior.text ? behavior.text : anthropicReply(prompt)).split(
      /(?<= )/,
    );
    // The prompt's uncached part, as the API counts input_tokens; the cache's part is reported beside it.
    const inputTokens = messages.reduce(
      (n, m) => n + contentText(m.content).split(/\s+/).filter(Boolean).length,
      0,
    );
    const cache =
      behavior.kind === 'ok'
        ? {
            cache_read_input_tokens: behavior.cacheRead ?? 0,
            cache_creation_input_tokens: behavior.cacheWrite ?? 0,
          }
        : {};
    const model = String(body.model);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(
      event('message_start', {
        message: {
          id: 'msg_mock',
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: inputTokens, output_tokens: 1, ...cache },
        },
      }),
    );
    res.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
    const words =
      behavior.kind === 'streamError' || behavior.kind === 'hang' ? behavior.words : pieces.length;
    for (const piece of pieces.slice(0, words)) {
      res.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } }));
    }
    if (behavior.kind === 'hang') return;
    if (behavior.kind === 'streamError') {
      res.end(event('error', { error: { type: behavior.type, message: behavior.message } }));
      return;
    }
    res.write(event('content_block_stop', { index: 0 }));
    res.write(
      event('message_delta', {
        delta:
          behavior.kind === 'ok' && behavior.stopSequence !== undefined
            ? { stop_reason: 'stop_sequence', stop_sequence: behavior.stopSequence }
            : { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: pieces.length },
      }),
    );
    res.end(event('message_stop', {}));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    sent,
    queue: (...more) => behaviors.push(...more),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
