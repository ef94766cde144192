import type { DatabasePool } from 'slonik';

import { insertRequestLogs, type RequestLogEntry } from '../../shared/db/queries/requestLogs.ts';
import { isDatabaseUnavailable } from '../../shared/errors/unavailable.ts';
import type { Logger } from '../../shared/observability/logger.ts';

const flushEveryMs = 100;
const maxBuffered = 10_000;
// Bodies are at most 8 KiB each (redact.ts); one statement carries a bounded payload.
const maxRowsPerStatement = 500;
// A batch PostgreSQL refuses is split in halves until the bad rows stand alone: about 2·log2(n)
// statements per bad row. Past this many statements in one flush the rest of that batch is dropped.
const maxStatementsPerBatch = 64;
// Rows whose write failed for another reason than the database being out (a statement timeout, a
// permission) go back to the buffer at most this many times each. Rows that met the database out
// wait for it (a restart takes seconds), bounded by the buffer's size, not by a count of tries.
const maxAttempts = 3;
const maxBackoffMs = 5_000;

type Pending = { entry: RequestLogEntry; attempts: number };

/** SQLSTATE of a database error, looked for through slonik's wrapping `cause`s. */
function sqlStateOf(error: unknown): string | undefined {
  for (let at = error, hops = 0; at && hops < 5; at = (at as { cause?: unknown }).cause, hops++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/**
 * Whether the rows themselves were refused (a value out of range, text or JSON PostgreSQL cannot
 * store, a violated constraint, a row too big) rather than the database being unreachable or busy:
 * classes 22 (data exception), 23 (integrity constraint) and 54 (program limit exceeded).
 */
function isRowError(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state !== undefined && /^(22|23|54)/.test(state);
}

/**
 * Buffers request-log rows and writes them in one statement every 100 ms, off the request's latency
 * path. A row PostgreSQL refuses is found by splitting its batch and dropped alone; the rest of the
 * batch is stored. When the database cannot be reached the rows wait in the buffer and the writer
 * backs off (up to 5 s between tries; rows wait out an outage, other failures are tried 3 times); the buffer holds at most 10,000 rows
 * and drops new ones beyond that, so an outage costs neither unbounded memory nor a busy loop.
 */
export class RequestLogWriter {
  private buffer: Pending[] = [];
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly pool: DatabasePool;
  private readonly logger: Logger;
  private backoffMs = 0;
  private nextTryAt = 0;
  private droppedWhileFull = 0;
  private readonly now: () => number;

  private readonly observe: ((entry: RequestLogEntry) => void) | undefined;

  /** `observe` sees every entry as it is pushed: each answered API call, REST or MCP tool call. */
  constructor(
    pool: DatabasePool,
    logger: Logger,
    options: { now?: () => number; observe?: (entry: RequestLogEntry) => void } = {},
  ) {
    this.pool = pool;
    this.logger = logger;
    this.now = options.now ?? Date.now;
    this.observe = options.observe;
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  push(entry: RequestLogEntry): void {
    this.observe?.(entry);
    if (this.buffer.length >= maxBuffered) {
      this.droppedWhileFull++;
      return;
    }
    this.buffer.push({ entry, attempts: 0 });
  }

  /** Entries waiting for the batched write. */
  get pending(): number {
    return this.buffer.length;
  }

  /** Writes what is buffered (unless backing off after an outage); resolves when done. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.drain(false));
    return this.flushing;
  }

  /** Stops the timer and makes one last attempt, backoff or not; rows still unwritten are dropped. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.flushing = this.flushing.then(() => this.drain(true));
    await this.flushing;
    if (this.buffer.length > 0) {
      this.logger.error({ rows: this.buffer.length }, 'request log rows dropped at shutdown');
      this.buffer = [];
    }
  }

  private async drain(final: boolean): Promise<void> {
    if (this.droppedWhileFull > 0) {
      this.logger.error({ rows: this.droppedWhileFull }, 'request log buffer full; rows dropped');
      this.droppedWhileFull = 0;
    }
    if (!final && this.now() < this.nextTryAt) return;
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, maxRowsPerStatement);
      const unwritten = await this.store(batch);
      if (unwritten.rows.length > 0) {
        this.requeue(unwritten.rows, unwritten.databaseOut);
        return;
      }
      this.backoffMs = 0;
    }
  }

  /**
   * Inserts `batch`, splitting it around rows PostgreSQL refuses. Returns the rows left unwritten
   * because the database itself failed (to be tried again later), and whether it was out; refused
   * rows are logged and dropped.
   */
  private async store(batch: Pending[]): Promise<{ rows: Pending[]; databaseOut: boolean }> {
    const segments = [batch];
    let statements = 0;
    while (segments.length > 0) {
      const segment = segments.pop()!;
      if (statements >= maxStatementsPerBatch) {
        const rows = segments.reduce((n, s) => n + s.length, segment.length);
        this.logger.error({ rows }, 'request log rows dropped: too many refused rows in one batch');
        return { rows: [], databaseOut: false };
      }
      statements++;
      try {
        await insertRequestLogs(
          this.pool,
          segment.map((p) => p.entry),
        );
      } catch (error) {
        if (!isRowError(error)) {
          this.logger.error({ err: error, rows: batch.length }, 'request log flush failed; will retry');
          return { rows: [segment, ...segments].flat(), databaseOut: isDatabaseUnavailable(error) };
        }
        if (segment.length === 1) {
          this.logger.error(
            { err: error, requestId: segment[0]!.entry.request_id },
            'request log row refused by the database; dropped',
          );
          continue;
        }
        const half = Math.ceil(segment.length / 2);
        segments.push(segment.slice(half), segment.slice(0, half));
      }
    }
    return { rows: [], databaseOut: false };
  }

  private requeue(rows: Pending[], databaseOut: boolean): void {
    const again = databaseOut ? rows : rows.filter((p) => ++p.attempts < maxAttempts);
    if (again.length < rows.length) {
      this.logger.error(
        { rows: rows.length - again.length },
        'request log rows dropped after repeated failures',
      );
    }
    // Older rows first, and never past the buffer's bound.
    const merged = [...again, ...this.buffer];
    this.droppedWhileFull += Math.max(0, merged.length - maxBuffered);
    this.buffer = merged.slice(0, maxBuffered);
    this.backoffMs = Math.min(maxBackoffMs, Math.max(flushEveryMs, this.backoffMs * 2));
    this.nextTryAt = this.now() + this.backoffMs;
  }
}
