import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

export type ProbeState = 'operational' | 'degraded' | 'outage';

export async function insertStatusSample(
  db: Db,
  component: string,
  state: ProbeState,
  latencyMs: number | null,
  checkedAt?: string,
) {
  await db.query(sql.typeAlias('void')`
    insert into status_samples (component, state, latency_ms, checked_at)
    values (${component}, ${state}, ${latencyMs}, coalesce(${checkedAt ?? null}::timestamptz, now()))
  `);
}

const latestSampleRow = z.object({
  component: z.string(),
  state: z.enum(['operational', 'degraded', 'outage']),
  latency_ms: z.number().nullable(),
  checked_at: isoTimestamp,
  is_fresh: z.boolean(),
});

export function latestStatusSamples(db: Db) {
  return db.any(sql.type(latestSampleRow)`
    select distinct on (component) component, state, latency_ms, checked_at,
           checked_at > now() - interval '15 minutes' as is_fresh
    from status_samples order by component, checked_at desc
  `);
}

const dailySampleRow = z.object({
  component: z.string(),
  day: z.string(),
  samples: z.number(),
  up_samples: z.number(),
});

/** Samples and up-samples (operational or degraded) per component and UTC day, last 90 days. */
export function dailyStatusSamples(db: Db) {
  return db.any(sql.type(dailySampleRow)`
    select component, (checked_at at time zone 'utc')::date as day, count(*) as samples,
           count(*) filter (where state <> 'outage') as up_samples
    from status_samples
    where checked_at >= (now() at time zone 'utc')::date - 89
    group by 1, 2
  `);
}

export async function deleteStatusSamplesBefore(db: Db, days: number) {
  await db.query(
    sql.typeAlias(
      'void',
    )`delete from status_samples where checked_at < now() - make_interval(days => ${days})`,
  );
}
