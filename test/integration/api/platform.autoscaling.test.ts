import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import supertest from 'supertest';
import { z } from 'zod';

import { makeApp } from '../../../api/app.ts';
import { startJudoscaleReporter } from '../../../api/metrics/judoscaleReporter.ts';
import { sql } from '../../../shared/db/sql.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { projectRoot } from '../../helpers/processes.ts';

const token = 'hf_0123456789abcdef0123';
type JudoscaleReport = { dyno: string; pid: number; metrics: [number, number, string, string][] };
let t: TestContext;

beforeAll(async () => {
  t = await setupTestContext({ HIREFIRE_TOKEN: token });
});
afterAll(() => t.close());

/** The SQL block of docs/operations.md's KEDA PostgreSQL recipe. */
function kedaQuery(): string {
  const doc = readFileSync(path.join(projectRoot, 'docs/operations.md'), 'utf8');
  const recipe = doc.slice(doc.indexOf("### KEDA's PostgreSQL scaler"));
  return /```sql\n([\s\S]*?)```/.exec(recipe)![1]!;
}

const info = (path: string, headers: Record<string, string> = {}) => t.http.get(path).set(headers);

describe("HireFire's worker-queue endpoint", () => {
  it('answers the oldest due job’s age for the worker process, read from the database with no worker running', async () => {
    const idle = await info('/hirefire', { 'HireFire-Token': token }).expect(200);
    expect(idle.body).toEqual([{ name: 'worker', value: 0 }]);
    expect(idle.headers['content-type']).toMatch(/^application\/json/);
    expect(idle.headers['cache-control']).toBe('must-revalidate, private, max-age=0');

    // Jobs on two lanes, due 7 s and 30 s ago: a worker dyno serves every lane, so the older counts.
    await t.deps.pool.query(sql.typeAlias('void')`
      select from graphile_worker.add_job('text__generate', '{}'::json, run_at => now() - interval '7 seconds') a,
        graphile_worker.add_job('webhook__deliver', '{}'::json, run_at => now() - interval '30 seconds') b
    `);
    for (const res of [
      await info('/hirefire', { 'HireFire-Token': token }).expect(200),
      await info(`/hirefire/${token}/info`).expect(200),
    ]) {
      expect(res.body).toEqual([{ name: 'worker', value: expect.any(Number) }]);
      expect(res.body[0].value).toBeGreaterThanOrEqual(30);
      expect(Number.isInteger(res.body[0].value)).toBe(true);
    }

    // The KEDA recipe's query, as docs/operations.md gives it, sees the main lane's job alone.
    const client = new pg.Client({ connectionString: t.databaseUrl });
    await client.connect();
    // A scalar subquery: the recipe's query must answer one row of one number.
    const keda = await client.query<{ seconds: number }>(`select (${kedaQuery()}) as seconds`);
    await client.end();
    const seconds = Number(keda.rows[0]!.seconds);
    expect(seconds).toBeGreaterThanOrEqual(7);
    expect(seconds).toBeLessThan(30);

    // Once nothing is due (here: given up on), the latency is 0 again.
    await t.deps.pool.query(sql.typeAlias('void')`
      select from graphile_worker.permanently_fail_jobs(array(select id from graphile_worker.jobs), 'not this test')
    `);
    expect((await info(`/hirefire/${token}/info`).expect(200)).body).toEqual([{ name: 'worker', value: 0 }]);

    // No API call: nothing of it is in the request log.
    const logged = await t.deps.pool.anyFirst(sql.type(z.object({ path: z.string() }))`
      select path from request_logs where path like '/hirefire%'
    `);
    expect(logged).toEqual([]);
  });

  it('is not there for a missing or wrong token', async () => {
    await info('/hirefire').expect(404);
    await info('/hirefire', { 'HireFire-Token': `${token.slice(0, -1)}X` }).expect(404);
    const wrong = await info(`/hirefire/${token.slice(0, -1)}X/info`).expect(404);
    expect(wrong.body.error.code).toBe('not_found');
  });

  it('is not there at all unless HIREFIRE_TOKEN is set', async () => {
    const without = supertest(makeApp({ ...t.deps, config: { ...t.config, hirefireToken: undefined } }));
    const byHeader = await without.get('/hirefire').set('HireFire-Token', token);
    const byPath = await without.get(`/hirefire/${token}/info`);
    expect([byHeader.status, byPath.status]).toEqual([404, 404]);
  });
});

describe("Judoscale's adapter API", () => {
  it('receives the queue time and depth of every lane from the first web dyno, and none from the others', async () => {
    const reports: { path: string; type: string | undefined; body: JudoscaleReport }[] = [];
    let received!: () => void;
    const arrived = new Promise<void>((resolve) => (received = resolve));
    const judoscale = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        reports.push({ path: req.url ?? '', type: req.headers['content-type'], body: JSON.parse(text) });
        res.writeHead(204).end();
        // Three reports of the first dyno: time enough for the second to have posted, had it reported.
        if (reports.length === 3) received();
      });
    });
    await new Promise<void>((resolve) => judoscale.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(judoscale.address() as { port: number }).port}/api/app_token`;
    await t.deps.pool.query(sql.typeAlias('void')`
      select from graphile_worker.add_job('ocr__extract', '{}'::json, run_at => now() - interval '12 seconds')
    `);
    const second = startJudoscaleReporter(t.deps.pool, t.deps.logger, { url, dyno: 'web.2', intervalMs: 50 });
    const first = startJudoscaleReporter(t.deps.pool, t.deps.logger, { url, dyno: 'web.1', intervalMs: 50 });
    try {
      await arrived;
    } finally {
      await first.stop();
      await second.stop();
      await new Promise((resolve) => judoscale.close(resolve));
    }
    const [report] = reports;
    expect(report).toMatchObject({ path: '/api/app_token/v3/reports', type: 'application/json' });
    expect(report!.body).toMatchObject({ dyno: 'web.1', pid: process.pid });
    expect(new Set(reports.map((r) => r.body.dyno))).toEqual(new Set(['web.1']));
    const metric = (identifier: string, lane: string) =>
      report!.body.metrics.find(([, , id, queue]) => id === identifier && queue === lane);
    expect(metric('qt', 'ocr')![1]).toBeGreaterThanOrEqual(12_000);
    expect(metric('qd', 'ocr')![1]).toBe(1);
    expect(metric('qt', 'video')![1]).toBe(0);
    expect(metric('qt', 'ocr')![0]).toBeCloseTo(Date.now() / 1000, -1);
  });
});
