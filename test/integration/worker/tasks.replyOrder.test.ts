import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { type ChatProvider, ProviderError } from '../../../shared/providers/types.ts';
import type { TestContext } from '../../helpers/context.ts';
import { createTenant } from '../../helpers/fixtures.ts';
import { liveGeneration, messagesOnceThere, postFirstThenSecond, replyContext } from './reply.helpers.ts';

/** The live model, replaced in-process: it answers the last message it was sent, or fails as told. */
const answered: string[] = [];
let failFirstCall: Promise<void> | null = null;
const liveModel: ChatProvider = {
  async chat({ messages }) {
    const last = messages.at(-1)!.content;
    const asked = /(First|Second)\./.exec(last)?.[0] ?? last;
    if (failFirstCall) {
      const gate = failFirstCall;
      failFirstCall = null;
      await gate;
      throw new ProviderError('upstream 503', true);
    }
    answered.push(asked);
    return liveGeneration(`Reply to: ${asked}`, { inputTokens: 10, outputTokens: 5 });
  },
};

let t: TestContext;
let close: () => Promise<void>;

beforeAll(async () => ({ t, close } = await replyContext(liveModel, 100)));
afterAll(() => close());

const replyJobRow = z.object({
  seq: z.number(),
  status: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
});

describe('replies to one task', () => {
  it('keep message order while an earlier reply waits for its retry', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 10_000 });
    // The first reply's first attempt fails (retryable) once the second message is in.
    let secondPosted!: () => void;
    failFirstCall = new Promise((resolve) => (secondPosted = resolve));
    const taskId = await postFirstThenSecond(t, tenant.liveKey);
    secondPosted();

    const messages = await messagesOnceThere(t, tenant.liveKey, taskId, 4, 30_000);
    // The second reply waited for the first one's retry (graphile-worker's backoff), not only for
    // its failed attempt: a named queue is unlocked when an attempt fails.
    expect(messages.map((m) => `${m.role}: ${m.text}`)).toEqual([
      'user: First.',
      'user: Second.',
      'assistant: Reply to: First.',
      'assistant: Reply to: Second.',
    ]);
    expect(answered).toEqual(['First.', 'Second.']);
    const jobs = await t.deps.pool.many(sql.type(replyJobRow)`
      select u.seq, j.status, j.started_at, j.completed_at from jobs j
      join task_messages u on u.id = j.input ->> 'messageId'
      where u.task_id = ${taskId}
      order by u.seq
    `);
    expect(jobs.map((j) => j.status)).toEqual(['succeeded', 'succeeded']);
    expect(Date.parse(jobs[1]!.started_at!)).toBeGreaterThanOrEqual(Date.parse(jobs[0]!.completed_at!));
  });
});
