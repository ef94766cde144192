import { startOpenAiMock } from '../helpers/openaiMock.ts';
import { type BenchContext, type LoadResult, medianResult } from './harness.ts';

const rounds = 3;

const row = (r: LoadResult) =>
  `${r.requestsPerSecond} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, errors ${r.errors}, non-2xx ${r.non2xx}, steal ${r.stealPercent}%`;

/**
 * A response-cache hit (live key, Cache-TTL, answered by the api from PostgreSQL: lookup plus its
 * metering record) against a test-key call of the same operation (a fixture job through the queue and
 * a worker), for POST /text and POST /embeddings. Target: the hit's p50 at most the test key's, at
 * one connection. Rounds alternate the two so a change in the host's load falls on both alike.
 */
export default async function responseCacheBench(ctx: BenchContext): Promise<void> {
  const mock = await startOpenAiMock();
  const platform = await ctx.startPlatform({
    env: { PROVIDER: 'openai', OPENAI_BASE_URL: mock.baseUrl, OPENAI_API_KEY: mock.apiKey },
  });
  const { tenant } = platform;
  const call = (path: string, key: string, body: unknown, cached: boolean) => ({
    url: `${platform.baseUrl}${path}`,
    method: 'POST' as const,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      ...(cached ? { 'cache-ttl': '3600' } : {}),
    },
    body: JSON.stringify(body),
  });
  const operations = [
    { name: 'POST /text', path: '/text', body: { prompt: 'Say hi' } },
    { name: 'POST /embeddings', path: '/embeddings', body: { input: ['Say hi', 'and bye'] } },
  ];
  try {
    for (const op of operations) {
      const hit = call(op.path, tenant.liveKey, op.body, true);
      const fixture = call(op.path, tenant.testKey, op.body, false);
      // The first live call fills the cache from the fake provider; the rest must all be hits.
      const filled = await fetch(hit.url, { method: 'POST', headers: hit.headers, body: hit.body });
      if (filled.status !== 201) throw new Error(`${op.name} answered ${filled.status}`);
      await filled.arrayBuffer();
      const providerCalls = mock.requests.length;
      await ctx.load({ ...hit, connections: 4, seconds: 2 });
      await ctx.load({ ...fixture, connections: 4, seconds: 2 });
      await ctx.analyze();
      const runs = { hit: [] as LoadResult[], fixture: [] as LoadResult[] };
      for (let round = 0; round < rounds; round++) {
        runs.fixture.push(await ctx.load({ ...fixture, connections: 1, seconds: 4 }));
        runs.hit.push(await ctx.load({ ...hit, connections: 1, seconds: 4 }));
      }
      const [h, f] = [medianResult(runs.hit), medianResult(runs.fixture)];
      ctx.report(`${op.name}: cache hit (live key) vs test key, 1 connection, median of ${rounds} rounds`, {
        'test key (fixture job through the queue)': row(f),
        'cache hit (Cache-TTL, live key)': row(h),
        'hit p50 ≤ test-key p50': `${h.p50Ms} vs ${f.p50Ms} ms ${h.p50Ms <= f.p50Ms ? 'PASS' : 'FAIL'}`,
        'provider calls during the hits (must be 0)': mock.requests.length - providerCalls,
      });
    }
  } finally {
    await platform.stop();
    await mock.close();
  }
}
