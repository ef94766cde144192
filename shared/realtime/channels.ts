import { z } from 'zod';

/**
 * Every NOTIFY channel of the platform with the schema of its payload: the one place senders and
 * listeners agree on. Payloads are JSON objects carrying ids (listeners refetch rows) and, where a
 * read on the hot path is worth saving, a small value. PostgreSQL caps a payload at 8000 bytes.
 */
export const channels = {
  /**
   * A job ended (trigger jobs_notify, migrations 000001/000017): the cost and a result of at most
   * 6000 bytes ride along, so a waiting request needs no read.
   */
  'jobs:update': z.object({
    id: z.string(),
    status: z.enum(['succeeded', 'failed', 'cancelled']),
    cost: z.number().nullable().optional(),
    result: z.unknown().optional(),
  }),
  /** The api asks the worker running job `id` to stop (its client went away or timed out). */
  'jobs:cancel': z.object({ id: z.string() }),
  /**
   * A change that can affect API key authentication (trigger auth_changed_notify, migration 000010):
   * api processes empty their key caches, negative entries included.
   */
  'auth:changed': z.object({ table: z.string() }),
  /** A message was added to task `id` (trigger task_messages_notify, migration 000003). */
  'tasks:message': z.object({
    id: z.string(),
    messageId: z.string(),
    seq: z.number().int(),
    role: z.string(),
  }),
  /**
   * A piece of a streamed text generation: `offset` is where `text` starts in the whole reply
   * (UTF-16 units), so listeners drop repeats (a retried attempt) and see gaps (a lost notification).
   */
  'text:delta': z.object({ id: z.string(), offset: z.number().int().min(0), text: z.string() }),
  /**
   * A delivery to webhook endpoint `id` was queued (shared/webhooks/fanout.ts): a job draining that
   * endpoint takes it at once instead of leaving it to its own job, which would wait for a poll.
   */
  'webhooks:due': z.object({ id: z.string() }),
} as const;

export type Channel = keyof typeof channels;
export type ChannelPayload<C extends Channel> = z.infer<(typeof channels)[C]>;

export function isChannel(name: string): name is Channel {
  return Object.hasOwn(channels, name);
}

/**
 * A notification's payload checked against its channel's schema.
 * @returns undefined when the payload is not JSON or does not match (the caller logs and drops it).
 */
export function parsePayload<C extends Channel>(channel: C, raw: string): ChannelPayload<C> | undefined {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = channels[channel].safeParse(json);
  return parsed.success ? (parsed.data as ChannelPayload<C>) : undefined;
}
