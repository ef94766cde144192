import pg from 'pg';

import { ensurePgbouncer, pgbouncerSkipReason, startPgbouncer } from '../helpers/pgbouncer.ts';
import { backendCpu, backendCpuBetween, statCpuMs } from './cpu.ts';
import { type BenchContext, type LoadResult, medianResult, type Platform } from './harness.ts';
import { loadRow, median } from './stats.ts';

const rounds = 5;

type Variant = { name: string; env: Record<string, string>; databaseUrl?: string };
/** A load run with the CPU each call cost PostgreSQL's backends on the bench database and PgBouncer. */
type Run = LoadResult & { databaseCpuMsPerCall: number; pgbouncerCpuMsPerCall: number };
type Measured = { me: Run[]; text: Run[] };

const spread = (runs: LoadResult[]) =>
  `${Math.min(...runs.map((r) => r.requestsPerSecond))}–${Math.max(...runs.map((r) => r.requestsPerSecond))} req/s`;

const ratio = (a: LoadResult, b: LoadResult) => a.requestsPerSecond / Math.max(1, b.requestsPerSecond);

// Event loop (api and worker share this process's) + PostgreSQL + PgBouncer, ms per call.
const cpu = (runs: Run[]) => {
  const [loop, database, bouncer] = [
    median(runs.map((r) => r.serverCpuMsPerCall)),
    median(runs.map((r) => r.databaseCpuMsPerCall)),
    median(runs.map((r) => r.pgbouncerCpuMsPerCall)),
  ];
  return `${loop.toFixed(2)} + ${database.toFixed(2)} + ${bouncer.toFixed(2)} = ${(loop + database + bouncer).toFixed(2)}`;
};

async function withCpu(
  admin: pg.Client,
  bouncerPid: number,
  seconds: number,
  run: (seconds: number) => Promise<LoadResult>,
): Promise<Run> {
  const before = await backendCpu(admin);
  const bouncerBefore = statCpuMs(`/proc/${bouncerPid}/stat`);
  const result = await run(seconds);
  const after = await backendCpu(admin);
  const bouncerMs = statCpuMs(`/proc/${bouncerPid}/stat`) - bouncerBefore;
  // One that ended during the run is lost (pools keep theirs).
  const databaseMs = backendCpuBetween(before, after);
  const calls = Math.max(1, result.requestsPerSecond * seconds);
  return { ...result, databaseCpuMsPerCall: databaseMs / calls, pgbouncerCpuMsPerCall: bouncerMs / calls };
}

/**
 * GET /me and POST /text (test key, through the queue) at 32 connections with DATABASE_URL's pools
 * through PgBouncer in transaction mode (docs/pgbouncer.ini, default settings) against the same
 * platform on PostgreSQL direct, in one run. Target: through PgBouncer no more than 10 % slower.
 * Direct is measured twice, with named prepared statements (DATABASE_POOLER=none) and without
 * (DATABASE_POOLER=transaction on the direct URL): what the names are worth. Each round starts each
 * variant's platform (api + worker) afresh, alone: graphile-worker's jobs are the database's, so a
 * second platform's worker would run the first one's jobs. The order rotates round by round.
 */
export default async function poolerBench(ctx: BenchContext): Promise<void> {
  await ensurePgbouncer();
  const skip = pgbouncerSkipReason();
  if (skip) {
    ctx.report('DATABASE_URL through PgBouncer vs direct', { skipped: skip });
    return;
  }
  const bouncer = await startPgbouncer(ctx.databaseUrl);
  const admin = new pg.Client({ connectionString: ctx.databaseUrl });
  await admin.connect();
  const variants: Variant[] = [
    { name: 'direct, named statements', env: { DATABASE_POOLER: 'none' } },
    { name: 'direct, unnamed', env: { DATABASE_POOLER: 'transaction' } },
    { name: 'PgBouncer (transaction)', env: {}, databaseUrl: bouncer.urlFor(ctx.databaseUrl) },
  ];
  const measured = new Map<Variant, Measured>(variants.map((v) => [v, { me: [], text: [] }]));
  try {
    for (let round = 0; round < rounds; round++) {
      const order = variants.map((_, i, all) => all[(i + round) % all.length]!);
      for (const variant of order) {
        const platform = await ctx.startPlatform({ env: variant.env, databaseUrl: variant.databaseUrl });
        try {
          const runs = measured.get(variant)!;
          // Warmed (JIT, pool and server connections, caches) before each measured run.
          await loadMe(ctx, platform, 3);
          runs.me.push(await withCpu(admin, bouncer.pid, 6, (s) => loadMe(ctx, platform, s)));
          await loadText(ctx, platform, 3);
          runs.text.push(await withCpu(admin, bouncer.pid, 6, (s) => loadText(ctx, platform, s)));
        } finally {
          await platform.stop();
        }
      }
    }
  } finally {
    await admin.end();
    await bouncer.stop();
  }
  const [named, unnamed, pooled] = variants.map((v) => measured.get(v)!) as [Measured, Measured, Measured];
  const rows: Record<string, string> = {};
  for (const [endpoint, key] of [
    ['GET /me', 'me'],
    ['POST /text', 'text'],
  ] as const) {
    const [n, u, p] = [named, unnamed, pooled].map((m) => medianResult(m[key])) as [
      LoadResult,
      LoadResult,
      LoadResult,
    ];
    const through = ratio(p, n);
    rows[`${endpoint}, direct, named`] = `${loadRow(n)} (rounds ${spread(named[key])})`;
    rows[`${endpoint}, direct, unnamed`] = `${loadRow(u)} (rounds ${spread(unnamed[key])})`;
    rows[`${endpoint}, PgBouncer`] = `${loadRow(p)} (rounds ${spread(pooled[key])})`;
    rows[`${endpoint} CPU per call, event loop + PostgreSQL + PgBouncer ms: direct, named`] = cpu(named[key]);
    rows[`${endpoint} CPU per call, event loop + PostgreSQL + PgBouncer ms: direct, unnamed`] = cpu(
      unnamed[key],
    );
    rows[`${endpoint} CPU per call, event loop + PostgreSQL + PgBouncer ms: PgBouncer`] = cpu(pooled[key]);
    rows[`${endpoint}: PgBouncer / direct named (target ≥ 0.90)`] =
      `${through.toFixed(2)} ${through >= 0.9 ? 'PASS' : 'FAIL'}`;
    rows[`${endpoint}: PgBouncer / direct unnamed`] = ratio(p, u).toFixed(2);
    rows[`${endpoint}: direct named / unnamed`] = ratio(n, u).toFixed(2);
  }
  ctx.report(`DATABASE_URL through PgBouncer vs direct, 32 connections, median of ${rounds} rounds`, rows);
}

function loadMe(ctx: BenchContext, platform: Platform, seconds: number): Promise<LoadResult> {
  return ctx.load({
    url: `${platform.baseUrl}/me`,
    headers: { authorization: `Bearer ${platform.tenant.testKey}` },
    connections: 32,
    seconds,
  });
}

function loadText(ctx: BenchContext, platform: Platform, seconds: number): Promise<LoadResult> {
  return ctx.load({
    url: `${platform.baseUrl}/text`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${platform.tenant.testKey}` },
    body: JSON.stringify({ prompt: 'Say hi' }),
    connections: 32,
    seconds,
  });
}
