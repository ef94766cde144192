import http from 'node:http';

import { freePort } from '../../shared/embedded/freePort.ts';
import type { TestContext } from './context.ts';
import type { OtlpReceiver } from './otlpReceiver.ts';
import { type Spawned, spawnNode } from './processes.ts';

export type TracedPlatform = {
  port: number;
  /** http://127.0.0.1:{port}, also the api's PUBLIC_BASE_URL. */
  base: string;
  web: Spawned;
  worker: Spawned | undefined;
  /** Stops the processes (their last spans are exported as they stop). */
  stop(): Promise<void>;
};

/**
 * An api process (and a worker process with `worker`) on the context's database and storage,
 * exporting spans to `receiver` every 100 ms, with `env` added (and `workerEnv` to the worker's).
 */
export async function startTracedPlatform(
  t: TestContext,
  receiver: OtlpReceiver,
  env: Record<string, string>,
  options: { worker?: boolean; workerEnv?: Record<string, string> } = {},
): Promise<TracedPlatform> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const shared = {
    DATABASE_URL: t.databaseUrl,
    S3_ENDPOINT: t.s3.endpoint,
    S3_BUCKET: t.s3.bucket,
    PUBLIC_BASE_URL: base,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...env,
  };
  const web = spawnNode('api/server.ts', { ...shared, PORT: String(port) });
  const worker =
    options.worker === true ? spawnNode('worker/main.ts', { ...shared, ...options.workerEnv }) : undefined;
  const stop = async () => {
    await worker?.stop();
    await web.stop();
  };
  try {
    await web.waitFor(/api listening/);
    await worker?.waitFor(/worker started/);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, base, web, worker, stop };
}

export type SentRequest = { status: number; body: string };

/**
 * An HTTP request from a chosen local address (`127.0.0.2` is loopback too, but another peer than
 * `127.0.0.1` to a server judging trust by the connection's address); fetch cannot choose it.
 */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<SentRequest> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, localAddress },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A W3C traceparent with fresh random ids, sampled: what a caller's tracer would send. */
export function callerTraceparent(): { traceparent: string; traceId: string; spanId: string } {
  const hex = (bytes: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join(
      '',
    );
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceparent: `00-${traceId}-${spanId}-01`, traceId, spanId };
}
