import { describe, expect, it } from '@jest/globals';

import type { Db } from '../../shared/db/sql.ts';
import { TextDeltaPublisher } from '../../shared/generation/textDeltas.ts';

/** A stand-in connection recording each NOTIFY; each one takes a tick, like a round trip. */
function recordingDb() {
  const sent: { channel: string; payload: { id: string; offset: number; text: string } }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const db = {
    query: async (token: { values: readonly unknown[] }) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      sent.push({ channel: token.values[0] as string, payload: JSON.parse(token.values[1] as string) });
      inFlight--;
      return { rows: [] };
    },
  } as unknown as Db;
  return { db, sent, maxInFlight: () => maxInFlight };
}

describe('TextDeltaPublisher', () => {
  it('publishes one NOTIFY at a time, coalescing what arrives meanwhile, with running offsets', async () => {
    const { db, sent, maxInFlight } = recordingDb();
    const publisher = new TextDeltaPublisher(db, 'job_1', () => {});
    for (const word of ['Hello ', 'there, ', 'how ', 'are ', 'you?']) publisher.push(word);
    await publisher.flush();
    expect(maxInFlight()).toBe(1);
    expect(sent.map((s) => s.channel)).toEqual(sent.map(() => 'text:delta'));
    expect(sent.map((s) => s.payload)).toEqual([
      { id: 'job_1', offset: 0, text: 'Hello ' },
      { id: 'job_1', offset: 6, text: 'there, how are you?' },
    ]);
  });

  it('splits a long delta so every payload stays small, and keeps going after a failed NOTIFY', async () => {
    const { db, sent } = recordingDb();
    let failures = 0;
    let calls = 0;
    const flaky = {
      query: async (token: { values: readonly unknown[] }) => {
        if (calls++ === 0) throw new Error('connection reset');
        return (db as unknown as { query: (t: unknown) => Promise<unknown> }).query(token);
      },
    } as unknown as Db;
    const publisher = new TextDeltaPublisher(flaky, 'job_2', () => failures++);
    publisher.push('a'.repeat(10));
    publisher.push('b'.repeat(2500));
    await publisher.flush();
    expect(failures).toBe(1);
    expect(sent.map((s) => [s.payload.offset, s.payload.text.length])).toEqual([
      [10, 1000],
      [1010, 1000],
      [2010, 500],
    ]);
  });
});
