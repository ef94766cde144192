import net from 'node:net';
import { Writable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { type ApiHandle, startApi } from '../../../api/startApi.ts';
import { loadConfig } from '../../../shared/config/config.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { setupTestContext, type TestContext, testEnv } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let tenant: Tenant;
let api: ApiHandle;
const logLines: { level: number; msg: string }[] = [];

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  // A short request timeout, so a stalled body is refused within the test.
  const config = loadConfig({
    ...testEnv({ REQUEST_TIMEOUT_MS: '1000' }),
    DATABASE_URL: t.databaseUrl,
    PORT: '0',
  });
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  api = await startApi(
    config,
    { databaseUrl: t.databaseUrl, s3: t.s3 },
    createLogger('info', 'api', { destination }),
  );
});
afterAll(async () => {
  await api.stop();
  await t.close();
});

type RawAnswer = { status: number; headers: Record<string, string>; body: string; raw: string };

/**
 * Writes `bytes` on a fresh connection (then half-closes it when `end`), and collects everything the
 * server sends until it closes the connection.
 */
function exchange(bytes: Buffer | string, options: { end?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(api.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers = Object.fromEntries(
        headerLines.map((line) => {
          const at = line.indexOf(':');
          return [line.slice(0, at).toLowerCase(), line.slice(at + 1).trim()];
        }),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw });
    });
    socket.write(bytes);
    if (options.end) socket.end();
  });
}

function expectEnvelope(answer: RawAnswer, status: number): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers.connection).toBe('close');
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const parsed = JSON.parse(answer.body) as { error: { code: string; message: string; requestId: string } };
  expect(parsed.error.code).toBe('invalid_request_body');
  expect(parsed.error.message).toEqual(expect.any(String));
  expect(parsed.error.requestId).toMatch(/^req_\w{24}$/);
  expect(answer.headers['x-request-id']).toBe(parsed.error.requestId);
}

const postText = (length: number, body: string) =>
  [
    'POST /api/pub/v1/text HTTP/1.1',
    'Host: localhost',
    `Authorization: Bearer ${tenant.testKey}`,
    'Content-Type: application/json',
    `Content-Length: ${length}`,
    '',
    body,
  ].join('\r\n');

describe('requests the HTTP parser refuses get the error envelope', () => {
  it('a 20 KB Authorization header: 431', async () => {
    const answer = await exchange(
      `GET /api/pub/v1/me HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${'a'.repeat(20 * 1024)}\r\n\r\n`,
    );
    expectEnvelope(answer, 431);
  });

  it('a NUL byte in a header: 400', async () => {
    const answer = await exchange('GET /api/pub/v1/me HTTP/1.1\r\nHost: localhost\r\nX-Note: a\0b\r\n\r\n');
    expectEnvelope(answer, 400);
  });

  it('a body shorter than its Content-Length, then the client closes its side: 400, and the api carries on', async () => {
    const body = '{"prompt":"cut short"}';
    const answer = await exchange(postText(body.length + 50, body), { end: true });
    expectEnvelope(answer, 400);
  });

  it('a body shorter than its Content-Length, then the client stalls: 408 once the request timeout passes', async () => {
    const body = '{"prompt":"stalled"}';
    const answer = await exchange(postText(body.length + 50, body));
    expectEnvelope(answer, 408);
  });

  it('garbage after a request whose answer has begun: the connection ends, nothing is written into the answer', async () => {
    const task = await fetch(`http://127.0.0.1:${api.port}/api/pub/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hold a stream open.' }),
    });
    const { task: created } = (await task.json()) as { task: { id: string } };
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(api.port, '127.0.0.1');
      let raw = '';
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        const first = raw === '';
        raw += chunk.toString('latin1');
        // The stream's headers are out: now the same connection sends something that is not HTTP.
        if (first) socket.write('\0\0 not http \0\0\r\n\r\n');
      });
      socket.on('close', () => resolve(raw));
      socket.write(
        `GET /api/pub/v1/tasks/${created.id}/stream HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${tenant.testKey}\r\n\r\n`,
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/content-type: text\/event-stream/i);
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('logged no error for any of them, and serves the next request', async () => {
    const me = await fetch(`http://127.0.0.1:${api.port}/api/pub/v1/me`, {
      headers: { authorization: `Bearer ${tenant.testKey}` },
    });
    expect(me.status).toBe(200);
    expect(logLines.filter((line) => line.level >= 50)).toEqual([]);
  });
});
