import http from 'node:http';

import express from 'express';
import pg from 'pg';

import { type BenchContext, listen } from './harness.ts';
import { loadRows } from './loadRows.ts';

/**
 * GET /me against its floor: a bare Express route doing one primary-key lookup with pg on the same
 * database. Target: ≥ 0.5 of the floor's throughput, p99 ≤ 3× the floor's.
 */
export default async function meBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform({ worker: false });
  const pool = new pg.Pool({ connectionString: ctx.databaseUrl, max: 10 });
  const keyId = (await pool.query<{ id: string }>('select id from api_keys limit 1')).rows[0]!.id;
  const floorApp = express();
  floorApp.get('/floor', async (_req, res) => {
    const row = await pool.query('select id, name, livemode from api_keys where id = $1', [keyId]);
    res.json(row.rows[0]);
  });
  const floorServer = http.createServer(floorApp);
  const floorPort = await listen(floorServer);
  try {
    const opts = { connections: 32, seconds: 8 };
    // Warm both (JIT, pool connections) before measuring.
    await ctx.load({ url: `http://127.0.0.1:${floorPort}/floor`, connections: 8, seconds: 2 });
    await ctx.load({
      url: `${platform.baseUrl}/me`,
      headers: { authorization: `Bearer ${platform.tenant.testKey}` },
      connections: 8,
      seconds: 2,
    });
    const floor = await ctx.load({ url: `http://127.0.0.1:${floorPort}/floor`, ...opts });
    const me = await ctx.load({
      url: `${platform.baseUrl}/me`,
      headers: { authorization: `Bearer ${platform.tenant.testKey}` },
      ...opts,
    });
    const ratio = me.requestsPerSecond / floor.requestsPerSecond;
    const p99Ratio = me.p99Ms / Math.max(1, floor.p99Ms);
    ctx.report('GET /me vs floor (bare Express + one pg primary-key lookup)', {
      ...loadRows('floor', floor),
      ...loadRows('GET /me', me),
      'GET /me errors / non-2xx': `${me.errors} / ${me.non2xx}`,
      'throughput ratio (target ≥ 0.5)': `${ratio.toFixed(2)} ${ratio >= 0.5 ? 'PASS' : 'FAIL'}`,
      'p99 ratio (target ≤ 3)': `${p99Ratio.toFixed(2)} ${p99Ratio <= 3 ? 'PASS' : 'FAIL'}`,
    });
  } finally {
    await new Promise((resolve) => floorServer.close(resolve));
    await pool.end();
    await platform.stop();
  }
}
