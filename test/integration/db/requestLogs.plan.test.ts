import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';

import { listFilteredRequestLogs, type RequestLogFilter } from '../../../shared/db/queries/requestLogs.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

/**
 * The console's log page reads a few index pages, whoever else is busy. The trap: a workspace that
 * holds most of a month's calls but made none lately, beside another tenant's burst. Walking the
 * primary key (created_at, id) newest first then looks cheap to the planner and passes the whole
 * burst before the workspace's first call.
 */
let t: TestContext;
let quiet: Tenant;
let busy: Tenant;
let client: pg.Client;
const quietCalls = 200_000;
const burstCalls = 60_000;

beforeAll(async () => {
  t = await setupTestContext();
  quiet = await createTenant(t.deps.pool);
  busy = await createTenant(t.deps.pool);
  client = new pg.Client({ connectionString: t.databaseUrl });
  await client.connect();
  // The burst: another tenant's calls in the last minute, logged first (as they would be, the quiet
  // workspace's older calls being copied in afterwards is what the bench did; the heap order matters).
  await client.query(
    `insert into request_logs (request_id, workspace_id, key_id, operation, method, path, status, latency_ms,
                               request_body, response_body, created_at)
     select 'busy-' || g, $1, 'key_busy', 'text.generate', 'POST', '/api/pub/v1/text', 200, 5,
            '{"input":"[redacted]"}', '{"ok":true}', now() - (g::float / $2) * interval '1 minute'
     from generate_series(1, $2::int) g`,
    [busy.workspaceId, burstCalls],
  );
  // The quiet workspace's calls, spread over 30 days, the newest two minutes ago.
  await client.query(
    `insert into request_logs (request_id, workspace_id, key_id, operation, method, path, status, latency_ms,
                               request_body, response_body, created_at)
     select 'quiet-' || g, $1, case when g % 2000 = 0 then 'key_sparse' else 'key_quiet' end,
            case when g % 1000 = 0 then 'staff.list' else 'text.generate' end, 'POST', '/api/pub/v1/text',
            case when g % 500 = 0 then 500 else 200 end, 5,
            '{"input":"[redacted]"}', '{"ok":true}',
            now() - interval '2 minutes' - (g::float / $2) * interval '30 days'
     from generate_series(1, $2::int) g`,
    [quiet.workspaceId, quietCalls],
  );
  await client.query('vacuum (analyze) request_logs');
}, 120_000);
afterAll(async () => {
  await client.end();
  await t.close();
});

type PlanNode = { 'Shared Hit Blocks': number; 'Shared Read Blocks': number };

/** Runs the page's own statement under EXPLAIN ANALYZE: the buffers it touched, and the rows. */
async function pageCost(filter: RequestLogFilter) {
  let statement: { sql: string; values: readonly unknown[] } | undefined;
  const capture = {
    any: async (query: { sql: string; values: readonly unknown[] }) => {
      statement = query;
      return [];
    },
  } as unknown as Db;
  await listFilteredRequestLogs(capture, quiet.workspaceId, filter, { limit: 51, retentionDays: 30 });
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    // slonik numbers its placeholders $slonik_1, …; pg's are $1, …
    `explain (analyze, buffers, format json) ${statement!.sql.replace(/\$slonik_(\d+)/g, '$$$1')}`,
    statement!.values as unknown[],
  );
  const plan = rows[0]!['QUERY PLAN'][0].Plan;
  const page = await listFilteredRequestLogs(t.deps.pool, quiet.workspaceId, filter, {
    limit: 51,
    retentionDays: 30,
  });
  return { buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'], page };
}

describe('request log pages beside another tenant’s burst', () => {
  // Each filter with the calls it matches: the quiet workspace's call g (quiet-g, newer for smaller g)
  // has key_sparse every 2000th call, staff.list every 1000th, status 500 every 500th.
  it.each<[string, RequestLogFilter, (g: number) => boolean]>([
    ['newest page', {}, () => true],
    ['by key', { keyId: 'key_quiet' }, (g) => g % 2000 !== 0],
    ['by operation', { operation: 'text.generate' }, (g) => g % 1000 !== 0],
    ['by status', { status: { exact: 200 } }, (g) => g % 500 !== 0],
    ['by class', { status: { class: 2 } }, (g) => g % 500 !== 0],
    ['by key and class', { keyId: 'key_quiet', status: { class: 2 } }, (g) => g % 500 !== 0],
    ['sparse key', { keyId: 'key_sparse' }, (g) => g % 2000 === 0],
    ['sparse operation', { operation: 'staff.list' }, (g) => g % 1000 === 0],
    ['sparse class', { status: { class: 5 } }, (g) => g % 500 === 0],
    ['sparse key and class', { keyId: 'key_sparse', status: { class: 5 } }, (g) => g % 2000 === 0],
  ])('%s: reads the workspace’s own index, not the burst', async (_name, filter, matches) => {
    const { buffers, page } = await pageCost(filter);
    // Walking the burst read ~1,900 buffers; a page reads at most one heap page per call it lists.
    expect(buffers).toBeLessThan(300);
    const expected: string[] = [];
    for (let g = 1; expected.length < 51; g++) if (matches(g)) expected.push(`quiet-${g}`);
    expect(page.map((r) => r.request_id)).toEqual(expected);
  });
});
