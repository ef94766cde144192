import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';

import busboy from 'busboy';

import { encodePng } from '../../shared/providers/png.ts';

/** How the mock answers the next chat completion. */
export type ChatBehavior =
  /** An answer; `cachedTokens` of its prompt are reported as read from the prompt cache. */
  | { kind: 'ok'; text?: string; delayMs?: number; after?: Promise<unknown>; cachedTokens?: number }
  /** Streams `words` words, then holds the response open until the client goes away. */
  | { kind: 'hang'; words: number }
  /** Accepts the request and never answers (a stuck provider). */
  | { kind: 'stall' }
  /** Starts the answer, holds it until `until` resolves, then finishes it as `ok` would. */
  | { kind: 'held'; until: Promise<void> }
  /**
   * Streams `words` words, then an error event (as OpenRouter and vLLM report an upstream failure
   * mid-answer), and holds the response open until the client goes away.
   */
  | { kind: 'streamError'; words: number; error: { message: string; code?: number } }
  | { kind: 'status'; status: number; message: string; retryAfter?: string }
  /** Closes the connection without an answer. */
  | { kind: 'drop' }
  /**
   * A healthy provider that writes slowly: one `tok ` every `tokenMs` up to the request's output
   * budget (then finish_reason `length` and its usage), or until the client goes away.
   */
  | { kind: 'slow'; tokenMs: number }
  /** Asks for one function call (its arguments streamed in two pieces), finishing with `tool_calls`. */
  | { kind: 'toolCall'; name: string; arguments: string };

export type RecordedRequest = {
  path: string;
  authorization: string | undefined;
  /** Every request header as received (trace context among them). */
  headers: http.IncomingHttpHeaders;
  json?: Record<string, unknown>;
  fields?: Record<string, string>;
  file?: { filename: string; mimeType: string; bytes: number };
  /** Resolves when the client closed the connection of this request. */
  closed: Promise<void>;
  /** The tokens a `slow` answer wrote before it ended or its client went away. */
  sent?: number;
};

export type OpenAiMock = {
  baseUrl: string;
  apiKey: string;
  requests: RecordedRequest[];
  /** Queues behaviours for the coming chat completions (default: ok). */
  queueChat(...behaviors: ChatBehavior[]): void;
  /** Queues an error status for the next request to `path` (any endpoint). */
  failNext(path: string, status: number, message: string): void;
  /** Resolves with the next request to `path` once its body has been read. */
  nextRequest(path: string): Promise<RecordedRequest>;
  close(): Promise<void>;
};

/** The environment that points the `openai` provider at this mock. */
export function openaiEnv(mock: OpenAiMock): Record<string, string> {
  return { PROVIDER: 'openai', OPENAI_BASE_URL: mock.baseUrl, OPENAI_API_KEY: mock.apiKey };
}

/** The image every images/generations call answers with, as base64: a 4×4 PNG. */
export const mockImageB64 = encodePng(4, 4, () => [10, 20, 30]).toString('base64');

export function mockReply(prompt: string): string {
  return `Mock reply to: ${prompt}`;
}

const words = (text: string) => text.split(/(?<= )/);

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

async function readMultipart(req: http.IncomingMessage): Promise<Pick<RecordedRequest, 'fields' | 'file'>> {
  const fields: Record<string, string> = {};
  let file: RecordedRequest['file'];
  const parser = busboy({ headers: req.headers });
  parser.on('field', (name, value) => {
    fields[name] = value;
  });
  parser.on('file', (_name, stream, info) => {
    let bytes = 0;
    stream.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    stream.on('end', () => {
      file = { filename: info.filename ?? '', mimeType: info.mimeType, bytes };
    });
  });
  req.pipe(parser);
  await once(parser, 'close');
  return { fields, file };
}

/** A `slow` chat answer: `tok ` every `tokenMs` up to the budget, counted in `recorded.sent`. */
async function slowChat(
  res: http.ServerResponse,
  body: Record<string, unknown>,
  tokenMs: number,
  recorded: RecordedRequest,
): Promise<void> {
  const budget = Number(body.max_completion_tokens ?? body.max_tokens);
  const model = String(body.model);
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-slow', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: '' }, null));
  recorded.sent = 0;
  while (recorded.sent < budget) {
    await new Promise((resolve) => setTimeout(resolve, tokenMs));
    if (res.destroyed) return;
    res.write(chunk({ content: 'tok ' }, null));
    recorded.sent += 1;
  }
  res.write(chunk({}, 'length'));
  const usage = { prompt_tokens: 1, completion_tokens: budget, total_tokens: budget + 1 };
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-slow', model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** A `toolCall` answer: the call's id and name, then its arguments in two pieces, then its usage. */
function toolCallChat(
  res: http.ServerResponse,
  body: Record<string, unknown>,
  call: { name: string; arguments: string },
): void {
  const model = String(body.model);
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-tool', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const half = Math.floor(call.arguments.length / 2);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: null }, null));
  const first = {
    index: 0,
    id: 'call_mock_1',
    type: 'function',
    function: { name: call.name, arguments: '' },
  };
  res.write(chunk({ tool_calls: [first] }, null));
  res.write(
    chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(0, half) } }] }, null),
  );
  res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(half) } }] }, null));
  res.write(chunk({}, 'tool_calls'));
  const usage = { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 };
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-tool', model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/**
 * A local server speaking the OpenAI HTTP protocol (chat completions with SSE streaming,
 * embeddings, image generation, audio transcriptions): deterministic answers, scriptable failures,
 * and every request recorded. Tests point PROVIDER=openai at it; it listens on loopback only.
 */
export async function startOpenAiMock(apiKey = 'sk-mock-secret-key-0123456789'): Promise<OpenAiMock> {
  const requests: RecordedRequest[] = [];
  const chatQueue: ChatBehavior[] = [];
  const failures = new Map<string, { status: number; message: string }[]>();
  const arrivals = new EventEmitter();
  const sockets = new Set<Socket>();

  const chat = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Record<string, unknown>,
    recorded: RecordedRequest,
  ) => {
    const behavior = chatQueue.shift() ?? { kind: 'ok' };
    if (behavior.kind === 'slow') return slowChat(res, body, behavior.tokenMs, recorded);
    if (behavior.kind === 'toolCall') return toolCallChat(res, body, behavior);
    if (behavior.kind === 'status') {
      if (behavior.retryAfter) res.setHeader('retry-after', behavior.retryAfter);
      return send(res, behavior.status, { error: { message: behavior.message, type: 'mock' } });
    }
    if (behavior.kind === 'stall') return;
    if (behavior.kind === 'drop') return req.socket.destroy();
    // A gate the test opens: the provider answers only then (a long generation under test control).
    if (behavior.kind === 'ok' && behavior.after) await behavior.after;
    const messages = body.messages as { role: string; content: string | null }[];
    const prompt = messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const text = behavior.kind === 'ok' ? (behavior.text ?? mockReply(prompt)) : mockReply(prompt);
    const pieces = words(text);
    const model = String(body.model);
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: '' }, null));
    if (behavior.kind === 'held') await behavior.until;
    const limit =
      behavior.kind === 'hang' || behavior.kind === 'streamError' ? behavior.words : pieces.length;
    for (const piece of pieces.slice(0, limit)) {
      if (behavior.kind === 'ok' && behavior.delayMs) {
        await new Promise((r) => setTimeout(r, behavior.delayMs));
      }
      res.write(chunk({ content: piece }, null));
    }
    if (behavior.kind === 'streamError') res.write(`data: ${JSON.stringify({ error: behavior.error })}\n\n`);
    if (behavior.kind === 'hang' || behavior.kind === 'streamError') return;
    res.write(chunk({}, 'stop'));
    const cached = behavior.kind === 'ok' ? behavior.cachedTokens : undefined;
    // As OpenAI counts it: the cached tokens are part of prompt_tokens.
    const promptTokens =
      messages.reduce((n, m) => n + (m.content ?? '').split(/\s+/).filter(Boolean).length, 0) + (cached ?? 0);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: pieces.length,
      total_tokens: promptTokens + pieces.length,
      ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } }),
    };
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-mock', model, choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
  };

  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '').replace(/^\/v1/, '');
    const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
    const recorded: RecordedRequest = {
      path,
      authorization: req.headers.authorization,
      headers: req.headers,
      closed,
    };
    try {
      if (req.headers['content-type']?.startsWith('multipart/form-data')) {
        Object.assign(recorded, await readMultipart(req));
      } else recorded.json = await readJson(req);
    } catch {
      return send(res, 400, { error: { message: 'unreadable body' } });
    }
    requests.push(recorded);
    arrivals.emit(path, recorded);
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      // Like the real API, the error echoes part of the key it was given.
      const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      return send(res, 401, {
        error: { message: `Incorrect API key provided: ${given}.`, type: 'invalid_request_error' },
      });
    }
    const failure = failures.get(path)?.shift();
    if (failure) return send(res, failure.status, { error: { message: failure.message, type: 'mock' } });
    const body = recorded.json ?? {};
    switch (path) {
      case '/chat/completions':
        return chat(req, res, body, recorded);
      case '/embeddings': {
        const input = body.input as string[];
        const data = input.map((text, index) => ({
          object: 'embedding',
          index,
          embedding: [text.length, index, 0.5],
        }));
        // Out of order on purpose: clients must sort by index.
        return send(res, 200, {
          object: 'list',
          model: body.model,
          data: data.reverse(),
          usage: { prompt_tokens: input.length * 3, total_tokens: input.length * 3 },
        });
      }
      case '/images/generations': {
        return send(res, 200, {
          created: 0,
          data: [{ b64_json: mockImageB64 }],
          output_format: 'png',
          usage: { input_tokens: 7, output_tokens: 100 },
        });
      }
      case '/audio/transcriptions': {
        const text = `Mock transcript of ${recorded.file?.bytes ?? 0} bytes.`;
        const verbose = recorded.fields?.response_format === 'verbose_json';
        return send(res, 200, verbose ? { text, duration: 12.5, language: 'english' } : { text });
      }
      default:
        return send(res, 404, { error: { message: `no route ${path}` } });
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    queueChat: (...behaviors) => chatQueue.push(...behaviors),
    failNext: (path, status, message) =>
      failures.set(path, [...(failures.get(path) ?? []), { status, message }]),
    nextRequest: (path) => new Promise((resolve) => arrivals.once(path, resolve)),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
