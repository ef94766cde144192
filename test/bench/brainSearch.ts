import pg from 'pg';

import { type BenchContext } from './harness.ts';

const pages = 100_000;
const vocabulary = 5_000;
const wordsPerBody = 40;

/** A query with one letter of each word of 5+ letters dropped (a typo a user makes). */
function misspell(query: string): string {
  return query
    .split(' ')
    .map((w) => (w.length >= 5 ? w.slice(0, 2) + w.slice(3) : w))
    .join(' ');
}

/**
 * POST /brain/search over 100,000 pages of one workspace: pages of 40 words drawn from a vocabulary
 * of 5,000 made-up words (each word on about 800 pages), written by one set-based INSERT and
 * ANALYZEd, then queried with a mix of exact and misspelt two-word queries taken from page titles.
 * Target: p50 ≤ 20 ms.
 */
export default async function brainSearchBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform({ worker: false });
  const client = new pg.Client({ connectionString: ctx.databaseUrl });
  await client.connect();
  try {
    const started = Date.now();
    await client.query(
      `with vocab as (
         select array_agg(translate(substr(md5('w' || i), 1, 4 + i % 5), '0123456789', 'ghijklmnop') order by i) as w
         from generate_series(1, $2::int) i
       )
       insert into brain_pages (id, workspace_id, slug, title, body)
       select 'page_bench_' || g, $1, 'bench-' || g,
              w[1 + abs(hashtext(g || ':t1')) % $2] || ' ' || w[1 + abs(hashtext(g || ':t2')) % $2] || ' notes',
              (select string_agg(w[1 + abs(hashtext(g || ':' || k)) % $2], ' ') from generate_series(1, $4::int) k)
       from vocab, generate_series(1, $3::int) g`,
      [platform.tenant.workspaceId, vocabulary, pages, wordsPerBody],
    );
    const insertSeconds = (Date.now() - started) / 1000;
    await ctx.analyze();
    const titles = await client.query<{ title: string }>(
      `select title from brain_pages where workspace_id = $1 and id like 'page_bench_%' order by id limit 50`,
      [platform.tenant.workspaceId],
    );
    const exact = titles.rows.map((r) => r.title.split(' ').slice(0, 2).join(' '));
    const queries = exact.flatMap((q) => [q, misspell(q)]);
    const request = {
      url: `${platform.baseUrl}/brain/search`,
      method: 'POST' as const,
      headers: { authorization: `Bearer ${platform.tenant.testKey}`, 'content-type': 'application/json' },
      bodies: queries.map((query) => JSON.stringify({ query })),
    };
    // A misspelt query must find pages, or the figure would time searches that find nothing.
    const sample = await fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.bodies[1],
    });
    const sampleHits = ((await sample.json()) as { results: unknown[] }).results.length;
    await ctx.load({ ...request, connections: 4, seconds: 3 });
    const result = await ctx.load({ ...request, connections: 4, seconds: 10 });
    ctx.report(`POST /brain/search over ${pages.toLocaleString('en')} pages`, {
      'pages inserted (one INSERT) in s': insertSeconds.toFixed(1),
      'queries (exact + misspelt, in turn)': `${exact.length} + ${exact.length}`,
      [`hits for "${queries[1]}" (misspelt)`]: sampleHits,
      'requests/s (4 connections)': result.requestsPerSecond,
      'p50 / p99 ms': `${result.p50Ms} / ${result.p99Ms}`,
      'errors / non-2xx': `${result.errors} / ${result.non2xx}`,
      'p50 target ≤ 20 ms': `${result.p50Ms} ${result.p50Ms <= 20 && result.non2xx === 0 ? 'PASS' : 'FAIL'}`,
    });
  } finally {
    await client.end();
    await platform.stop();
  }
}
