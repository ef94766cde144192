import { z } from 'zod';

import { columnsOf, type Db, idRow, isoTimestamp, sql } from '../sql.ts';
import { afterPosition, cursorAt, cursorAtText, type ListPage, newestFirst } from './listPage.ts';
import { type NewWorkspaceRecord, workspaceRecord } from './workspaceRows.ts';

const endpointRow = workspaceRecord.extend({
  project_id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  secret: z.string(),
  enabled: z.boolean(),
  created_at: isoTimestamp,
  /** The secret a rotation replaced, signing deliveries too until previous_secret_expires_at. */
  previous_secret: z.string().nullable(),
  previous_secret_expires_at: isoTimestamp.nullable(),
});
export type WebhookEndpointRow = z.infer<typeof endpointRow>;

const endpointColumns = columnsOf(endpointRow);

export type NewWebhookEndpoint = NewWorkspaceRecord & {
  projectId: string;
  url: string;
  events: string[];
  secret: string;
};

export function insertWebhookEndpoint(db: Db, e: NewWebhookEndpoint) {
  return db.one(sql.type(endpointRow)`
    insert into webhook_endpoints (id, workspace_id, project_id, url, events, secret)
    values (${e.id}, ${e.workspaceId}, ${e.projectId}, ${e.url}, ${sql.array(e.events, 'text')}, ${e.secret})
    returning ${endpointColumns}
  `);
}

/**
 * Enabled endpoints subscribed to an event: those of the event's project, or every endpoint of the
 * workspace for an event that belongs to no project.
 */
export function findSubscribedEndpointIds(
  db: Db,
  event: { workspaceId: string; projectId: string | null; type: string },
) {
  return db.anyFirst(sql.type(idRow)`
    select id from webhook_endpoints
    where workspace_id = ${event.workspaceId} and enabled and ${event.type} = any(events)
      and (${event.projectId}::text is null or project_id = ${event.projectId})
    order by id
  `);
}

export async function insertWebhookDeliveries(
  db: Db,
  rows: { id: string; workspaceId: string; endpointId: string; eventId: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(sql.typeAlias('void')`
    insert into webhook_deliveries (id, workspace_id, endpoint_id, event_id)
    select * from unnest(
      ${sql.array(
        rows.map((r) => r.id),
        'text',
      )}::text[], ${sql.array(
        rows.map((r) => r.workspaceId),
        'text',
      )}::text[], ${sql.array(
        rows.map((r) => r.endpointId),
        'text',
      )}::text[], ${sql.array(
        rows.map((r) => r.eventId),
        'text',
      )}::text[]
    )
    on conflict (endpoint_id, event_id) do nothing
  `);
}

const deliveryRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  endpoint_id: z.string(),
  event_id: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: isoTimestamp.nullable(),
  /** Set when the next attempt was brought forward (catch-up), until that attempt is logged. */
  next_attempt_reason: z.string().nullable(),
  created_at: isoTimestamp,
  completed_at: isoTimestamp.nullable(),
});
export type WebhookDeliveryRow = z.infer<typeof deliveryRow>;

const deliveryColumns = columnsOf(deliveryRow);
const joinedDeliveryColumns = columnsOf(deliveryRow, 'd');

/** What one delivery attempt needs: the delivery, its endpoint and the event, in one round trip. */
const attemptContextRow = deliveryRow.extend({
  url: z.string(),
  secret: z.string(),
  /** The replaced secret while its overlap lasts (database clock), else null. */
  previous_secret: z.string().nullable(),
  endpoint_enabled: z.boolean(),
  event_type: z.string(),
  event_data: z.record(z.string(), z.unknown()),
  event_created_at: isoTimestamp,
  /** Some delivery of the endpoint waits on backoff after a failure (a 2xx would bring it forward). */
  endpoint_has_held: z.boolean(),
});
export type DeliveryAttemptContext = z.infer<typeof attemptContextRow>;

// The secret a rotation replaced, while its overlap lasts: judged on the database clock, the same
// for every worker.
const previousSecretInForce = sql.fragment`case when e.previous_secret_expires_at > now()
  then e.previous_secret end as previous_secret`;

// What bringForwardHeldDeliveries would find, asked first so that an endpoint with nothing held
// (nearly always) costs every 2xx one index probe, not that statement.
const endpointHasHeld = sql.fragment`exists (
  select from webhook_deliveries h
  where h.endpoint_id = d.endpoint_id and h.status = 'pending' and h.attempts > 0
    and h.next_attempt_at > now() and h.id <> d.id
) as endpoint_has_held`;

export function findDeliveryAttemptContext(db: Db, deliveryId: string) {
  return db.maybeOne(sql.type(attemptContextRow)`
    select ${joinedDeliveryColumns},
           e.url, e.secret, ${previousSecretInForce}, e.enabled as endpoint_enabled,
           ev.type as event_type, ev.data as event_data, ev.created_at as event_created_at,
           ${endpointHasHeld}
    from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id
    join events ev on ev.id = d.event_id
    where d.id = ${deliveryId}
  `);
}

/**
 * Locks a delivery to record an attempt, and lets that transaction commit without waiting for the
 * WAL flush (the setting is local to it): losing the record in a database crash only sends the
 * attempt again, which receivers deduplicate on `webhook-id`, and an endpoint taking deliveries back
 * to back then goes at its receiver's pace instead of the disk's.
 */
export function lockDeliveryToRecord(db: Db, deliveryId: string) {
  return db.maybeOne(sql.type(deliveryRow)`
    select ${deliveryColumns} from webhook_deliveries
    where id = ${deliveryId} and set_config('synchronous_commit', 'off', true) is not null
    for update
  `);
}

export type DeliveryAttempt = {
  deliveryId: string;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseExcerpt?: string | null;
  /** Why it ran when it did, when not on the retry schedule. */
  reason?: string | null;
};

export async function insertDeliveryAttempt(db: Db, a: DeliveryAttempt): Promise<void> {
  await db.query(sql.typeAlias('void')`
    insert into webhook_delivery_attempts (delivery_id, attempt, status_code, error, duration_ms, response_excerpt, reason)
    values (${a.deliveryId}, ${a.attempt}, ${a.statusCode}, ${a.error}, ${a.durationMs}, ${a.responseExcerpt ?? null},
            ${a.reason ?? null})
  `);
}

/**
 * Records the outcome of attempt `attempts`: `pending` with the next attempt's time, or final. The
 * reason an attempt was brought forward is spent by it.
 */
export async function updateDelivery(
  db: Db,
  d: {
    id: string;
    status: 'pending' | 'succeeded' | 'failed';
    attempts: number;
    lastStatusCode: number | null;
    lastError: string | null;
    nextAttemptAt: string | null;
  },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update webhook_deliveries
    set status = ${d.status}, attempts = ${d.attempts}, last_status_code = ${d.lastStatusCode},
        last_error = ${d.lastError}, next_attempt_at = ${d.nextAttemptAt}::timestamptz, next_attempt_reason = null,
        completed_at = case when ${d.status} = 'pending' then null else now() end
    where id = ${d.id}
  `);
}

/**
 * The catch-up after an endpoint answered 2xx to `trigger` (issue 39): its other deliveries waiting
 * on backoff because the endpoint could not be reached (no answer, 408, 429 or 5xx) are due now,
 * each with the reason its next attempt runs early. Their attempt jobs (keyed
 * `webhook:<delivery>:<attempt>`, see enqueueDeliveryAttempt) are due now too, a microsecond apart
 * oldest first, since graphile-worker takes due jobs by run_at; they stay in the endpoint's queue,
 * which runs one at a time. Writes graphile-worker's private jobs table as releaseQueueLocks does
 * (its `jobs` view cannot be updated; reschedule_jobs gives every job one time). Returns the ids,
 * oldest first.
 */
export function bringForwardHeldDeliveries(
  db: Db,
  trigger: { endpointId: string; deliveryId: string; statusCode: number },
) {
  return db.anyFirst(sql.type(idRow)`
    with locked as (
      select d.id, d.created_at, d.attempts, d.next_attempt_at
      from webhook_deliveries d
      where d.endpoint_id = ${trigger.endpointId} and d.status = 'pending' and d.id <> ${trigger.deliveryId}
        and d.attempts > 0 and d.next_attempt_at > now()
        and (d.last_status_code is null or d.last_status_code in (408, 429) or d.last_status_code >= 500)
      for update
    ), held as (
      select l.*, row_number() over (order by l.created_at, l.id) as n from locked l
    ), moved as (
      update webhook_deliveries d
      set next_attempt_at = now(),
          next_attempt_reason = format(
            'caught up: the endpoint answered %s to %s at %s after failures; this attempt was due at %s',
            ${trigger.statusCode}::int, ${trigger.deliveryId}::text,
            to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
            to_char(h.next_attempt_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      from held h where d.id = h.id
    ), due as (
      update graphile_worker._private_jobs j
      set run_at = now() + h.n * interval '1 microsecond'
      from held h
      where j.key = 'webhook:' || h.id || ':' || (h.attempts + 1) and j.locked_at is null
    )
    select id from held order by n
  `);
}

/**
 * The oldest of an endpoint's pending deliveries whose next attempt is due (a first attempt, a
 * retry whose time has come, one brought forward), and that attempt's number
 * (webhook_deliveries_pending_idx).
 */
/**
 * An endpoint's oldest deliveries whose next attempt is due, but those in `excluding`, with what
 * their attempt needs (as findDeliveryAttemptContext) and the trace context the attempt's queued job
 * carries (the trace of the event that caused it), if any.
 */
export function findDueDeliveries(db: Db, endpointId: string, limit: number, excluding: string[]) {
  return db.any(sql.type(dueDeliveryRow)`
    select ${joinedDeliveryColumns},
           e.url, e.secret, ${previousSecretInForce}, e.enabled as endpoint_enabled,
           ev.type as event_type, ev.data as event_data, ev.created_at as event_created_at,
           ${endpointHasHeld},
           (select j.payload -> 'trace' from graphile_worker._private_jobs j
            where j.key = 'webhook:' || d.id || ':' || (d.attempts + 1)) as trace
    from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id
    join events ev on ev.id = d.event_id
    where d.endpoint_id = ${endpointId} and d.status = 'pending'
      and (d.next_attempt_at is null or d.next_attempt_at <= now())
      and d.id <> all(${sql.array(excluding, 'text')})
    order by d.created_at, d.id
    limit ${limit}
  `);
}
export type DueDelivery = z.infer<typeof dueDeliveryRow>;

const dueDeliveryRow = attemptContextRow.extend({ trace: z.unknown() });

/** Drops the queued job of an attempt made by another delivery's job (graphile-worker's remove_job). */
export async function removeAttemptJob(db: Db, jobKey: string): Promise<void> {
  await db.query(sql.typeAlias('void')`select from graphile_worker.remove_job(${jobKey})`);
}

/** The delivery log of an endpoint, newest first (operators and tests read it). */
export function listEndpointDeliveries(db: Db, endpointId: string, limit: number) {
  return db.any(sql.type(deliveryRow)`
    select ${deliveryColumns} from webhook_deliveries
    where endpoint_id = ${endpointId}
    order by created_at desc, id
    limit ${limit}
  `);
}

const attemptRow = z.object({
  delivery_id: z.string(),
  attempt: z.number(),
  status_code: z.number().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number(),
  reason: z.string().nullable(),
  created_at: isoTimestamp,
});

export function listDeliveryAttempts(db: Db, deliveryId: string) {
  return db.any(sql.type(attemptRow)`
    select delivery_id, attempt, status_code, error, duration_ms, reason, created_at
    from webhook_delivery_attempts where delivery_id = ${deliveryId}
    order by attempt
  `);
}

/** Sets an endpoint's enabled flag: its id and URL, or null when the workspace has none such. */
export function updateWebhookEndpoint(
  db: Db,
  endpointId: string,
  workspaceId: string,
  change: { enabled: boolean },
) {
  return db.maybeOne(sql.type(endpointRow.pick({ id: true, url: true }))`
    update webhook_endpoints set enabled = ${change.enabled}
    where id = ${endpointId} and workspace_id = ${workspaceId}
    returning id, url
  `);
}

const rotatedRow = endpointRow.pick({ id: true, url: true, previous_secret_expires_at: true });

/**
 * Gives an endpoint a new secret; the one it replaces keeps signing for `overlapSeconds` from now
 * (database clock), none when 0. A rotation during an overlap drops the oldest secret: two at most.
 * Any workspace's endpoint when `workspaceId` is null (the operator CLI).
 */
export function rotateEndpointSecret(
  db: Db,
  input: { endpointId: string; workspaceId: string | null; secret: string; overlapSeconds: number },
) {
  return db.maybeOne(sql.type(rotatedRow)`
    update webhook_endpoints
    set previous_secret = case when ${input.overlapSeconds} > 0 then secret end,
        previous_secret_expires_at = case when ${input.overlapSeconds} > 0
          then now() + make_interval(secs => ${input.overlapSeconds}) end,
        secret = ${input.secret}
    where id = ${input.endpointId} and (${input.workspaceId}::text is null or workspace_id = ${input.workspaceId})
    returning id, url, previous_secret_expires_at
  `);
}

/** Ends a rotation's overlap now: deliveries are signed with the current secret alone. */
export function expirePreviousSecret(db: Db, endpointId: string, workspaceId: string) {
  return db.maybeOne(sql.type(endpointRow.pick({ id: true, url: true }))`
    update webhook_endpoints set previous_secret = null, previous_secret_expires_at = null
    where id = ${endpointId} and workspace_id = ${workspaceId}
    returning id, url
  `);
}

/** An endpoint by id alone, whatever its workspace (the operator CLI), with what a resend checks. */
export function findWebhookEndpoint(db: Db, endpointId: string) {
  return db.maybeOne(sql.type(endpointRow.pick({ id: true, workspace_id: true, enabled: true }))`
    select id, workspace_id, enabled from webhook_endpoints where id = ${endpointId}
  `);
}

/** One of an endpoint's deliveries, locked; null when it is not that endpoint's. */
export function lockEndpointDelivery(db: Db, endpointId: string, deliveryId: string) {
  return db.maybeOne(sql.type(deliveryRow)`
    select ${deliveryColumns} from webhook_deliveries
    where id = ${deliveryId} and endpoint_id = ${endpointId}
    for update
  `);
}

/**
 * Up to `limit` of an endpoint's failed deliveries created at or after `since`, oldest first,
 * locked (webhook_deliveries_failed_idx). A concurrent resend of the same rows waits for this one
 * and then finds them pending, so no delivery is resent twice by two overlapping calls.
 */
export function lockFailedDeliveriesSince(db: Db, endpointId: string, since: string, limit: number) {
  return db.any(sql.type(deliveryRow)`
    select ${deliveryColumns} from webhook_deliveries
    where endpoint_id = ${endpointId} and status = 'failed' and created_at >= ${since}::timestamptz
    order by created_at, id
    limit ${limit}
    for update
  `);
}

/**
 * How many of an endpoint's deliveries created at or after `since` failed, counted up to `cap`
 * (webhook_deliveries_failed_idx).
 */
export function countFailedDeliveriesSince(db: Db, endpointId: string, since: string, cap: number) {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from (
      select from webhook_deliveries
      where endpoint_id = ${endpointId} and status = 'failed' and created_at >= ${since}::timestamptz
      limit ${cap}
    ) failed
  `);
}

/**
 * Deliveries made pending again with their next attempt due now and the reason it is made
 * ("resent by <actor> at <time>", database clock), which that attempt's log row takes over.
 */
export async function reopenDeliveries(db: Db, deliveryIds: readonly string[], actor: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update webhook_deliveries
    set status = 'pending', completed_at = null, next_attempt_at = now(),
        next_attempt_reason = format('resent by %s at %s', ${actor}::text,
          to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    where id = any(${sql.array([...deliveryIds], 'text')})
  `);
}

/** An endpoint as the console shows it: never a secret; the old one's end while it is in force. */
const shownEndpointRow = endpointRow
  .omit({ secret: true, previous_secret: true, previous_secret_expires_at: true })
  .extend({ previous_secret_until: isoTimestamp.nullable() });
const previousSecretUntil = sql.fragment`case when e.previous_secret_expires_at > now()
  then e.previous_secret_expires_at end as previous_secret_until`;

const listedEndpointRow = shownEndpointRow.extend({
  project_name: z.string(),
  cursor_at: cursorAtText,
});

/** A workspace's endpoints with their project, newest first, a page after (created_at, id). */
export function listWorkspaceEndpoints(db: Db, workspaceId: string, page: ListPage) {
  return db.any(sql.type(listedEndpointRow)`
    select e.id, e.workspace_id, e.project_id, e.url, e.events, e.enabled, e.created_at, p.name as project_name,
           ${previousSecretUntil}, ${cursorAt('e')}
    from webhook_endpoints e join projects p on p.id = e.project_id
    where e.workspace_id = ${workspaceId} ${afterPosition(page, 'e')}
    ${newestFirst(page, 'e')}
  `);
}

export function findWorkspaceEndpoint(db: Db, endpointId: string, workspaceId: string) {
  return db.maybeOne(sql.type(shownEndpointRow)`
    select e.id, e.workspace_id, e.project_id, e.url, e.events, e.enabled, e.created_at, ${previousSecretUntil}
    from webhook_endpoints e where e.id = ${endpointId} and e.workspace_id = ${workspaceId}
  `);
}

const consoleAttemptRow = attemptRow.omit({ delivery_id: true }).extend({
  response_excerpt: z.string().nullable(),
});
const consoleDeliveryRow = deliveryRow.extend({
  event_type: z.string(),
  cursor_at: cursorAtText,
  attempt_log: z.array(consoleAttemptRow),
});

/**
 * An endpoint's deliveries, newest first, a page after (created_at, id), each with every attempt
 * (webhook_deliveries_endpoint_idx, then the attempts' unique (delivery_id, attempt) index).
 */
export function listEndpointDeliveryLog(db: Db, endpointId: string, page: ListPage) {
  return db.any(sql.type(consoleDeliveryRow)`
    select d.id, d.workspace_id, d.endpoint_id, d.event_id, d.status, d.attempts, d.last_status_code, d.last_error,
           d.next_attempt_at, d.next_attempt_reason, d.created_at, d.completed_at, ev.type as event_type,
           ${cursorAt('d')},
           coalesce((
             select json_agg(json_build_object('attempt', a.attempt, 'status_code', a.status_code, 'error', a.error,
                                               'duration_ms', a.duration_ms, 'response_excerpt', a.response_excerpt,
                                               'reason', a.reason, 'created_at', a.created_at) order by a.attempt)
             from webhook_delivery_attempts a where a.delivery_id = d.id
           ), '[]') as attempt_log
    from webhook_deliveries d join events ev on ev.id = d.event_id
    where d.endpoint_id = ${endpointId} ${afterPosition(page, 'd')}
    ${newestFirst(page, 'd')}
  `);
}

const lockedEndpointRow = endpointRow.pick({
  id: true,
  workspace_id: true,
  project_id: true,
  url: true,
  enabled: true,
});

/** An endpoint by id, locked: test events to it are checked against its limit one at a time. */
export function lockWebhookEndpoint(db: Db, endpointId: string) {
  return db.maybeOne(sql.type(lockedEndpointRow)`
    select id, workspace_id, project_id, url, enabled from webhook_endpoints where id = ${endpointId}
    for update
  `);
}

/** The event kind of "send test event" (no endpoint subscribes to it: it goes to one endpoint). */
export const webhookTestEventType = 'webhook.test';

/**
 * Whole seconds until the endpoint may take another test event, 0 when it may now: one per
 * `intervalSeconds` (webhook_deliveries_endpoint_idx reads only that window's deliveries).
 */
export function testEventWaitSeconds(db: Db, endpointId: string, intervalSeconds: number) {
  return db.oneFirst(sql.type(z.object({ wait: z.number() }))`
    select coalesce(ceil(extract(epoch from max(d.created_at) + make_interval(secs => ${intervalSeconds}) - now())),
                    0)::int as wait
    from webhook_deliveries d join events ev on ev.id = d.event_id
    where d.endpoint_id = ${endpointId} and d.created_at > now() - make_interval(secs => ${intervalSeconds})
      and ev.type = ${webhookTestEventType}
  `);
}

/**
 * A test event and its one delivery, to that endpoint alone, in one statement (the event exists
 * only for the delivery; fan-out never sees it).
 */
export async function insertTestDelivery(
  db: Db,
  t: {
    eventId: string;
    deliveryId: string;
    workspaceId: string;
    projectId: string;
    endpointId: string;
    data: Record<string, string>;
  },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    with event as (
      insert into events (id, workspace_id, project_id, type, data)
      values (${t.eventId}, ${t.workspaceId}, ${t.projectId}, ${webhookTestEventType}, ${sql.jsonb(t.data)})
      returning id
    )
    insert into webhook_deliveries (id, workspace_id, endpoint_id, event_id)
    select ${t.deliveryId}, ${t.workspaceId}, ${t.endpointId}, id from event
  `);
}
