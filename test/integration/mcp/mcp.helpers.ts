import { once } from 'node:events';
import http from 'node:http';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createParser } from 'eventsource-parser';

import { makeApp } from '../../../api/app.ts';
import type { AppDeps } from '../../../api/deps.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';

export type McpServer = { t: TestContext; base: string; url: string; close(): Promise<void> };

/**
 * A real listening api whose PUBLIC_BASE_URL is itself, for clients that need a socket (the SDK,
 * the Inspector CLI, the conformance runner); `deps` overrides the app's (shorter stream holds).
 */
export async function startMcpServer(
  env: Record<string, string> = {},
  deps: Partial<AppDeps> = {},
): Promise<McpServer> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await setupTestContext({ ...env, PUBLIC_BASE_URL: base });
  const server = http.createServer(makeApp({ ...t.deps, ...deps }));
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    t,
    base,
    url: `${base}/api/pub/v1/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await t.close();
    },
  };
}

/** The SDK's transport, asking initialize for `version` (the SDK itself always asks for its newest). */
class PinnedTransport extends StreamableHTTPClientTransport {
  private readonly version: string | undefined;

  constructor(url: URL, secret: string, version: string | undefined) {
    super(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } });
    this.version = version;
  }

  override send(message: JSONRPCMessage, options?: Parameters<StreamableHTTPClientTransport['send']>[1]) {
    if (this.version && 'method' in message && message.method === 'initialize') {
      (message.params as { protocolVersion: string }).protocolVersion = this.version;
    }
    return super.send(message, options);
  }
}

/** The official SDK client connected with `secret`, over the 2025 handshake revision `version`. */
export async function connectSdk(server: McpServer, secret: string, version?: string): Promise<Client> {
  const client = new Client({ name: 'mcp-round-two-test', version: '1.0.0' });
  await client.connect(new PinnedTransport(new URL(server.url), secret, version));
  return client;
}

export const statelessVersion = '2026-07-28';

/** One stateless 2026-07-28 request, hand-built (the SDK does not speak it): the parsed JSON answer. */
export async function stateless(
  server: McpServer,
  secret: string,
  method: string,
  params: Record<string, unknown> = {},
  id: string | number = 1,
): Promise<{ status: number; body: Record<string, unknown>; requestId: string }> {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: statelessHeaders(secret, method),
    body: JSON.stringify(statelessMessage(method, params, id)),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    requestId: res.headers.get('x-request-id')!,
  };
}

export function statelessHeaders(secret: string, method: string): Record<string, string> {
  return {
    authorization: `Bearer ${secret}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': statelessVersion,
    'mcp-method': method,
  };
}

export function statelessMessage(method: string, params: Record<string, unknown>, id: string | number) {
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': statelessVersion } },
  };
}

export type Listen = {
  status: number;
  messages: Record<string, unknown>[];
  /** Resolves with the first message (already received or to come) that `predicate` accepts. */
  waitFor(
    predicate: (m: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  ended: Promise<void>;
  close(): void;
  /** The JSON body when the answer was not a stream (an error). */
  body?: Record<string, unknown>;
};

/** subscriptions/listen over real HTTP: the response stream's JSON-RPC messages as they arrive. */
export async function openListen(
  server: McpServer,
  secret: string,
  uris: string[],
  id = 'listen-1',
): Promise<Listen> {
  const controller = new AbortController();
  const res = await fetch(server.url, {
    method: 'POST',
    headers: statelessHeaders(secret, 'subscriptions/listen'),
    body: JSON.stringify(
      statelessMessage('subscriptions/listen', { notifications: { resourceSubscriptions: uris } }, id),
    ),
    signal: controller.signal,
  });
  const messages: Record<string, unknown>[] = [];
  const waiters: {
    predicate: (m: Record<string, unknown>) => boolean;
    resolve: (m: Record<string, unknown>) => void;
  }[] = [];
  const base = { status: res.status, messages, close: () => controller.abort() };
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const body = (await res.json()) as Record<string, unknown>;
    return {
      ...base,
      body,
      ended: Promise.resolve(),
      waitFor: () => Promise.reject(new Error('not a stream')),
    };
  }
  const parser = createParser({
    onEvent(event) {
      const message = JSON.parse(event.data) as Record<string, unknown>;
      messages.push(message);
      for (const waiter of [...waiters]) {
        if (!waiter.predicate(message)) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    },
  });
  const ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch {
      // aborted by close()
    }
  })();
  return {
    ...base,
    ended,
    waitFor(predicate, timeoutMs = 10_000) {
      const seen = messages.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching message within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          predicate,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
  };
}
