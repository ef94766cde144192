import { dailyStatusSamples, latestStatusSamples } from '../shared/db/queries/statusSamples.ts';
import type { Db } from '../shared/db/sql.ts';

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

function lastDays(count: number, today = new Date()): string[] {
  const days: string[] = [];
  for (let i = count - 1; i >= 0; i--) {
    days.push(
      new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i))
        .toISOString()
        .slice(0, 10),
    );
  }
  return days;
}

/**
 * Builds GET /status from the probe samples: a component is `unknown` when it has no sample in the
 * last fifteen minutes; the top-level state is the worst component state.
 */
export async function readStatus(db: Db) {
  const [latest, daily] = await Promise.all([latestStatusSamples(db), dailyStatusSamples(db)]);
  const days = lastDays(90);
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
