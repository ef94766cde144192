import { startOpenAiMock } from '../helpers/openaiMock.ts';
import type { BenchContext, Platform } from './harness.ts';
import { median, timedCalls } from './stats.ts';

const calls = 150;

/**
 * What a fallback costs: POST /text, one call at a time, through a route whose first provider
 * answers 503 at once and whose second answers, against the second alone. Fallback's own cost is the
 * difference less the failed attempt's own time (a direct request to the failing fake, measured the
 * same way). Target: ≤ 5 ms. Both fakes are local OpenAI-compatible servers; the breaker never opens.
 */
export default async function fallbackBench(ctx: BenchContext): Promise<void> {
  const [failing, answering] = await Promise.all([startOpenAiMock(), startOpenAiMock()]);
  const provider = (mock: typeof failing) => ({
    type: 'openai',
    baseUrl: mock.baseUrl,
    apiKeyEnv: mock === failing ? 'FAILING_KEY' : 'ANSWERING_KEY',
    breaker: { failures: 1000 },
  });
  const env = (route: string[]) => ({
    PROVIDERS: JSON.stringify({
      providers: { failing: provider(failing), answering: provider(answering) },
      routes: { text: route },
    }),
    FAILING_KEY: failing.apiKey,
    ANSWERING_KEY: answering.apiKey,
  });
  const direct = await ctx.startPlatform({ env: env(['answering/m']) });
  const fallback = await ctx.startPlatform({ env: env(['failing/m', 'answering/m']) });
  try {
    const post = (platform: Platform) => async () => {
      const res = await fetch(`${platform.baseUrl}/text`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${platform.tenant.liveKey}` },
        body: JSON.stringify({ prompt: 'bench' }),
      });
      if (res.status !== 201) throw new Error(`POST /text answered ${res.status}`);
      await res.arrayBuffer();
    };
    const failedAttempt = async () => {
      const res = await fetch(`${failing.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${failing.apiKey}` },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'bench' }], stream: true }),
      });
      await res.arrayBuffer();
    };
    const queueFailures = (n: number) => {
      for (let i = 0; i < n; i++) failing.queueChat({ kind: 'status', status: 503, message: 'down' });
    };
    // Warm both paths (JIT, pools), then alternate rounds so a change in the host's load falls on all.
    queueFailures(40);
    await timedCalls(post(direct), 20);
    await timedCalls(post(fallback), 20);
    await timedCalls(failedAttempt, 20);
    const rounds = { direct: [] as number[], fallback: [] as number[], failed: [] as number[] };
    for (let round = 0; round < 3; round++) {
      rounds.direct.push(...(await timedCalls(post(direct), calls / 3)));
      queueFailures(2 * (calls / 3));
      rounds.failed.push(...(await timedCalls(failedAttempt, calls / 3)));
      rounds.fallback.push(...(await timedCalls(post(fallback), calls / 3)));
    }
    const [d, f, a] = [median(rounds.direct), median(rounds.fallback), median(rounds.failed)];
    const cost = f - d - a;
    ctx.report('POST /text: a fallback after a fast 503 vs the answering provider alone', {
      'answering provider alone p50 ms': d.toFixed(2),
      'failing first, then answering p50 ms': f.toFixed(2),
      "the failed attempt's own time p50 ms": a.toFixed(2),
      'fallback cost (target ≤ 5 ms)': `${cost.toFixed(2)} ${cost <= 5 ? 'PASS' : 'FAIL'}`,
    });
  } finally {
    await direct.stop();
    await fallback.stop();
    await Promise.all([failing.close(), answering.close()]);
  }
}
