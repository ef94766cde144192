import type { DatabasePool } from 'slonik';

import { insertRequestLogs, type RequestLogEntry } from '../shared/db/queries/requestLogs.ts';
import type { Logger } from '../shared/logger.ts';
import { toStorableText } from '../shared/storableText.ts';

const flushEveryMs = 100;
const maxBuffered = 10_000;

/**
 * Buffers request-log rows and writes them in one statement every 100 ms, off the request's latency
 * path. A failed flush is logged and dropped rather than retried forever: the log is an audit aid,
 * and holding rows would grow memory without bound while the database is down.
 */
export class RequestLogWriter {
  private buffer: RequestLogEntry[] = [];
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly pool: DatabasePool;
  private readonly logger: Logger;

  constructor(pool: DatabasePool, logger: Logger) {
    this.pool = pool;
    this.logger = logger;
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  push(entry: RequestLogEntry): void {
    if (this.buffer.length >= maxBuffered) return;
    this.buffer.push(entry);
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.buffer.length === 0) return;
      const batch = this.buffer;
      this.buffer = [];
      try {
        await insertRequestLogs(this.pool, batch);
      } catch (error) {
        this.logger.error({ err: error, rows: batch.length }, 'request log flush failed');
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

const secretKey = /secret|password|token|authorization|api[_-]?key|code_verifier/i;
const maxString = 1000;

/**
 * A copy safe to keep for 30 days: secrets masked, long strings (base64 payloads, prompts) cut, and
 * text jsonb refuses replaced (a refused request is logged too, and one bad row would lose its batch).
 */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6) return '[…]';
  if (typeof value === 'string') {
    return toStorableText(
      value.length > maxString ? `${value.slice(0, 200)}…[${value.length} chars]` : value,
    );
  }
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[toStorableText(k)] = secretKey.test(k) ? '[redacted]' : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}
