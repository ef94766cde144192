import { notify } from '../db/queries/notifications.ts';
import type { Db } from '../db/sql.ts';
import type { ChannelPayload } from '../realtime/channels.ts';

/**
 * The wire between a worker generating text and the api streaming it: NOTIFY on `text:delta` (see
 * shared/realtime/channels.ts). NOTIFY is not durable: the done event is built from the job row, never from
 * the deltas.
 */
export type TextDelta = ChannelPayload<'text:delta'>;

// NOTIFY payloads must stay under 8000 bytes. JSON escapes a UTF-16 unit into at most 6 bytes
// (\u0000); 1000 units stay far below the limit with the id and offset around them.
export const maxDeltaUnits = 1000;

/** Splits `text` into pieces of at most `max` UTF-16 units without cutting a surrogate pair in two. */
export function splitForNotify(text: string, max = maxDeltaUnits): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + max);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff && end - 1 > start) end -= 1;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

/**
 * Publishes a reply's deltas in order. One NOTIFY is in flight at a time and whatever arrives
 * meanwhile is coalesced into the next one: commit order is delivery order, and a fast model does
 * not cost one statement per token. A failed NOTIFY is reported and skipped (the done event
 * carries the full text anyway).
 */
export class TextDeltaPublisher {
  private pending = '';
  private offset = 0;
  private inflight: Promise<void> | undefined;
  private readonly db: Db;
  private readonly jobId: string;
  private readonly onError: (error: unknown) => void;

  constructor(db: Db, jobId: string, onError: (error: unknown) => void) {
    this.db = db;
    this.jobId = jobId;
    this.onError = onError;
  }

  push(text: string): void {
    if (text === '') return;
    this.pending += text;
    this.pump();
  }

  /** Resolves once everything pushed so far has been published. */
  async flush(): Promise<void> {
    while (this.inflight) await this.inflight;
  }

  private pump(): void {
    if (this.inflight || this.pending === '') return;
    const [piece = ''] = splitForNotify(this.pending);
    this.pending = this.pending.slice(piece.length);
    const delta: TextDelta = { id: this.jobId, offset: this.offset, text: piece };
    this.offset += piece.length;
    this.inflight = notify(this.db, 'text:delta', delta)
      .catch(this.onError)
      .finally(() => {
        this.inflight = undefined;
        this.pump();
      });
  }
}
