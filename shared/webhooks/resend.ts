import type { DatabasePool } from 'slonik';

import { isKeyedJobRunning } from '../db/queries/queueJobs.ts';
import {
  findWebhookEndpoint,
  lockEndpointDelivery,
  lockFailedDeliveriesSince,
  reopenDeliveries,
  type WebhookDeliveryRow,
} from '../db/queries/webhooks.ts';
import type { Db } from '../db/sql.ts';
import type { WebhookProblem } from './endpoints.ts';
import { attemptJobKey, enqueueDeliveryAttempt } from './fanout.ts';

/**
 * Deliveries one `since` resend takes at most. Each costs a row update and a job in one
 * transaction (100 took about 0.6 s on a busy two-core machine), and webhook_deliveries_failed_idx
 * finds them without reading the endpoint's other deliveries, so a call holds its locks for about
 * that long however old `since` is; `next` says where the rest begin, for another call.
 */
export const resendSinceLimit = 100;

/** What a resend asks for: one delivery, or the endpoint's failed deliveries created since a time. */
export type ResendTarget = { deliveryId: string } | { since: Date };

export type ResentDelivery = {
  id: string;
  /** The attempt that sends it again (the delivery's attempts so far + 1). */
  attempt: number;
  /** Its status before: a pending one was brought forward, never sent twice. */
  was: WebhookDeliveryRow['status'];
};

export type ResendResult =
  | {
      resent: ResentDelivery[];
      /** A `since` resend that hit resendSinceLimit: the createdAt to resend the rest from. */
      next: string | null;
    }
  | { problem: WebhookProblem };

/**
 * A time given for "resend failed deliveries since": an ISO 8601 date (`2026-11-29`) or date and
 * time (`2026-11-29T08:30`, seconds and fraction optional), UTC unless it ends in `Z` or an offset.
 * Null for anything else, including dates that do not exist (`2026-02-30`).
 */
export function parseSince(text: string): Date | null {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$/.exec(
      text.trim(),
    );
  if (!m) return null;
  const [, year, month, day, hour = '00', minute = '00', second = '00', zone] = m;
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (calendar.getUTCMonth() !== Number(month) - 1 || calendar.getUTCDate() !== Number(day)) return null;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  const withZone = /T/.test(text)
    ? text.trim() + (zone === undefined ? 'Z' : '')
    : `${text.trim()}T00:00:00Z`;
  const at = new Date(withZone);
  return Number.isNaN(at.getTime()) ? null : at;
}

/**
 * Sends deliveries of an endpoint again (issue 39): each gets a new attempt of the same event (same
 * body and `webhook-id`, signed with the endpoint's current secret), made by the worker's ordinary
 * delivery job in the endpoint's queue and metered nowhere. Its log row carries "resent by `actor`
 * at <time>". What happens by status:
 * - failed or succeeded: pending again with its next attempt due now; if that attempt fails, the
 *   retry schedule goes on from its number (one that had spent all its attempts gets just this one);
 * - pending: its next attempt is brought forward to now (the same attempt and job, never a second
 *   one); if a worker is making that attempt at this moment, that attempt is the resend and nothing
 *   changes.
 * `since` takes only failed deliveries created at or after it, oldest first, at most
 * resendSinceLimit. Everything happens in one transaction, with the deliveries locked. The endpoint
 * must be in `workspaceId` when one is given (the console's); the operator CLI gives none.
 * Problems: not_found (no such endpoint or delivery of it), conflict (the endpoint is disabled).
 */
export function resendDeliveries(
  pool: DatabasePool,
  input: { endpointId: string; workspaceId?: string; actor: string; target: ResendTarget },
): Promise<ResendResult> {
  return pool.transaction(async (tx): Promise<ResendResult> => {
    const endpoint = await findWebhookEndpoint(tx, input.endpointId);
    if (!endpoint || (input.workspaceId !== undefined && endpoint.workspace_id !== input.workspaceId)) {
      return { problem: { code: 'not_found', message: `no webhook endpoint ${input.endpointId}` } };
    }
    if (!endpoint.enabled) {
      return {
        problem: { code: 'conflict', message: 'the endpoint is disabled: enable it before resending' },
      };
    }
    if ('deliveryId' in input.target) {
      const delivery = await lockEndpointDelivery(tx, endpoint.id, input.target.deliveryId);
      if (!delivery) {
        return {
          problem: {
            code: 'not_found',
            message: `no delivery ${input.target.deliveryId} of webhook endpoint ${endpoint.id}`,
          },
        };
      }
      return { resent: await resendLocked(tx, [delivery], input.actor), next: null };
    }
    const rows = await lockFailedDeliveriesSince(
      tx,
      endpoint.id,
      input.target.since.toISOString(),
      resendSinceLimit + 1,
    );
    const taken = rows.slice(0, resendSinceLimit);
    return {
      resent: await resendLocked(tx, taken, input.actor),
      next: rows[resendSinceLimit]?.created_at ?? null,
    };
  });
}

/**
 * Reopens locked deliveries and queues each one's next attempt, due now, in the caller's
 * transaction. The job key makes the enqueue of a pending delivery's waiting attempt move that job
 * (graphile-worker replaces a keyed job that is not running) rather than add a second one.
 */
async function resendLocked(
  tx: Db,
  deliveries: readonly WebhookDeliveryRow[],
  actor: string,
): Promise<ResentDelivery[]> {
  const toSend: WebhookDeliveryRow[] = [];
  for (const d of deliveries) {
    // A worker holding the attempt's job is sending it now: that send is the resend.
    const sending =
      d.status === 'pending' && (await isKeyedJobRunning(tx, attemptJobKey(d.id, d.attempts + 1)));
    if (!sending) toSend.push(d);
  }
  if (toSend.length > 0) {
    await reopenDeliveries(
      tx,
      toSend.map((d) => d.id),
      actor,
    );
  }
  for (const d of toSend) {
    await enqueueDeliveryAttempt(
      tx,
      { deliveryId: d.id, attempt: d.attempts + 1 },
      { endpointId: d.endpoint_id },
    );
  }
  return deliveries.map((d) => ({ id: d.id, attempt: d.attempts + 1, was: d.status }));
}
