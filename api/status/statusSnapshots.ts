import { dailyStatusSamples, latestStatusSamples } from '../../shared/db/queries/statusSamples.ts';
import { findStatusSnapshot, storeStatusSnapshot } from '../../shared/db/queries/statusSnapshot.ts';
import type { DatabasePool, Db } from '../../shared/db/sql.ts';
import { isDatabaseUnavailable } from '../../shared/errors/unavailable.ts';
import { lastUtcDays } from '../../shared/primitives/utcDays.ts';

/** The status page's components (DESIGN.md), in display order. */
export const statusComponents = [
  { component: 'api', label: 'Public API' },
  { component: 'workers', label: 'Background workers' },
  { component: 'database', label: 'Database' },
  { component: 'storage', label: 'File storage' },
  { component: 'ocr', label: 'OCR' },
] as const;

export type ComponentState = 'operational' | 'degraded' | 'outage' | 'unknown';

const severity: Record<ComponentState, number> = { operational: 0, unknown: 1, degraded: 2, outage: 3 };

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Builds GET /status from the probe samples: a component is `unknown` when it has no sample in the
 * last fifteen minutes; the top-level state is the worst component state.
 */
export async function readStatus(db: Db) {
  const [latest, daily] = await Promise.all([latestStatusSamples(db), dailyStatusSamples(db)]);
  const days = lastUtcDays(90, Date.now());
  const components = statusComponents.map(({ component, label }) => {
    const sample = latest.find((s) => s.component === component);
    const state: ComponentState = sample && sample.is_fresh ? sample.state : 'unknown';
    const perDay = new Map(daily.filter((d) => d.component === component).map((d) => [d.day, d]));
    let samples = 0;
    let up = 0;
    const dayList = days.map((day) => {
      const d = perDay.get(day);
      samples += d?.samples ?? 0;
      up += d?.up_samples ?? 0;
      return {
        day,
        samples: d?.samples ?? 0,
        upSamples: d?.up_samples ?? 0,
        uptimePercent: d && d.samples > 0 ? round2((100 * d.up_samples) / d.samples) : null,
      };
    });
    return {
      component,
      label,
      state,
      latencyMs: sample?.latency_ms ?? null,
      checkedAt: sample?.checked_at ?? null,
      uptime90dPercent: samples > 0 ? round2((100 * up) / samples) : null,
      days: dayList,
    };
  });
  const state = components.reduce<ComponentState>(
    (worst, c) => (severity[c.state] > severity[worst] ? c.state : worst),
    'operational',
  );
  const checked = components
    .map((c) => c.checkedAt)
    .filter((c): c is string => c !== null)
    .sort();
  return { state, checkedAt: checked.at(-1) ?? null, components };
}

export type StatusBody = Awaited<ReturnType<typeof readStatus>>;

/**
 * What GET /status says while the database cannot be read: the last snapshot this process saw (or
 * every component unknown) with the database in outage, checked now.
 */
export function databaseOutageStatus(last: StatusBody | undefined, now: number): StatusBody {
  const days = lastUtcDays(90, now).map((day) => ({ day, samples: 0, upSamples: 0, uptimePercent: null }));
  const checkedAt = new Date(now).toISOString();
  const components = statusComponents.map(({ component, label }) => {
    const known = last?.components.find((c) => c.component === component);
    const base = known ?? {
      component,
      label,
      state: 'unknown' as ComponentState,
      latencyMs: null,
      checkedAt: null,
      uptime90dPercent: null,
      days,
    };
    return component === 'database'
      ? { ...base, state: 'outage' as const, latencyMs: null, checkedAt }
      : base;
  });
  return { state: 'outage', checkedAt, components };
}

// While the database is out, the outage answer stands this long, so a flood of reads does not
// become a flood of connection attempts.
const outageCacheMs = 5_000;

type Snapshot = { body: Promise<StatusBody>; expiresAt: number };

// Spec "Limits": the status endpoint is cached 30 seconds.
export const statusCacheMs = 30_000;

/**
 * GET /status's one snapshot for the whole fleet: stored in the database by the first api process
 * that needs a fresh one and served by every process until it is 30 s old (by the database's clock),
 * so two reads a moment apart on two web processes answer the same. Each process also keeps the
 * snapshot until then, so a flood of unauthenticated reads costs one query per process per 30 s.
 */
export class StatusSnapshots {
  private current: Snapshot | undefined;
  private lastGood: StatusBody | undefined;
  private readonly pool: DatabasePool;

  constructor(pool: DatabasePool) {
    this.pool = pool;
  }

  /** The snapshot and how many more milliseconds it stands. */
  async get(): Promise<{ body: StatusBody; remainingMs: number }> {
    const now = Date.now();
    if (!this.current || now >= this.current.expiresAt) this.current = this.refresh();
    const entry = this.current;
    const body = await entry.body;
    return { body, remainingMs: Math.max(0, entry.expiresAt - Date.now()) };
  }

  /** A snapshot being loaded; while the database is out, the outage answer for a few seconds. */
  private refresh(): Snapshot {
    const entry: Snapshot = {
      expiresAt: Number.POSITIVE_INFINITY,
      body: this.load().then(
        (l) => {
          entry.expiresAt = Date.now() + l.remainingMs;
          this.lastGood = l.body;
          return l.body;
        },
        (error: unknown) => {
          if (!isDatabaseUnavailable(error)) {
            if (this.current === entry) this.current = undefined;
            throw error;
          }
          entry.expiresAt = Date.now() + outageCacheMs;
          return databaseOutageStatus(this.lastGood, Date.now());
        },
      ),
    };
    return entry;
  }

  private async load(): Promise<{ body: StatusBody; remainingMs: number }> {
    let row = await findStatusSnapshot(this.pool);
    if (!row || row.age_ms >= statusCacheMs) {
      row = await storeStatusSnapshot(this.pool, await readStatus(this.pool), statusCacheMs);
    }
    return { body: row.body as StatusBody, remainingMs: Math.max(0, statusCacheMs - row.age_ms) };
  }
}
