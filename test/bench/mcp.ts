import { type BenchContext, type LoadResult, medianResult } from './harness.ts';
import { loadRows } from './loadRows.ts';

const rounds = 3;

/**
 * tools/call get_task on POST /mcp beside its REST twin GET /tasks/{taskId}, in the same run and
 * alternated round by round so the host's load falls on both alike. The tool runs the REST
 * operation's function in process through the same pipeline's checks (api/pipeline/), so the difference is
 * the JSON-RPC layer and the tool call's own request-log entry. Target: p50 and p99 ≤ 1.2× the
 * REST call's.
 */
export default async function mcpBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform({ worker: false });
  try {
    const auth = { authorization: `Bearer ${platform.tenant.testKey}` };
    const created = await fetch(`${platform.baseUrl}/tasks`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Bench task.' }),
    });
    const { task } = (await created.json()) as { task: { id: string } };
    const rest = { url: `${platform.baseUrl}/tasks/${task.id}`, headers: auth };
    const mcp = {
      url: `${platform.baseUrl}/mcp`,
      method: 'POST' as const,
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_task', arguments: { taskId: task.id } },
      }),
    };
    const probe = (await (await fetch(mcp.url, mcp)).json()) as { result?: { isError: boolean } };
    if (probe.result?.isError !== false) {
      throw new Error(`tools/call get_task failed: ${JSON.stringify(probe)}`);
    }
    await ctx.load({ ...rest, connections: 8, seconds: 2 });
    await ctx.load({ ...mcp, connections: 8, seconds: 2 });
    await ctx.analyze();
    // ping: the /mcp request alone (auth, body, JSON-RPC, request log), without a tool's REST call.
    const ping = { ...mcp, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) };
    const restRuns: LoadResult[] = [];
    const mcpRuns: LoadResult[] = [];
    const pingRuns: LoadResult[] = [];
    for (let i = 0; i < rounds; i++) {
      restRuns.push(await ctx.load({ ...rest, connections: 16, seconds: 4 }));
      mcpRuns.push(await ctx.load({ ...mcp, connections: 16, seconds: 4 }));
      pingRuns.push(await ctx.load({ ...ping, connections: 16, seconds: 2 }));
    }
    const r = medianResult(restRuns);
    const m = medianResult(mcpRuns);
    const p = medianResult(pingRuns);
    const p50Ratio = m.p50Ms / Math.max(1, r.p50Ms);
    const p99Ratio = m.p99Ms / Math.max(1, r.p99Ms);
    const verdict = (ratio: number) => `${ratio.toFixed(2)} ${ratio <= 1.2 ? 'PASS' : 'FAIL'}`;
    ctx.report('MCP tools/call get_task vs GET /tasks/{taskId}', {
      ...loadRows('GET /tasks/{id}', r),
      ...loadRows('tools/call get_task', m),
      'ping (the /mcp layer alone) p50 / p99 ms': `${p.p50Ms} / ${p.p99Ms}`,
      'ping server CPU ms per call': p.serverCpuMsPerCall,
      'server / postgres CPU ms per call (REST)': `${r.serverCpuMsPerCall} / ${r.postgresCpuMsPerCall}`,
      'server / postgres CPU ms per call (MCP)': `${m.serverCpuMsPerCall} / ${m.postgresCpuMsPerCall}`,
      'errors / non-2xx (REST, MCP)': `${r.errors}/${r.non2xx}, ${m.errors}/${m.non2xx}`,
      'p50 ratio (target ≤ 1.2)': verdict(p50Ratio),
      'p99 ratio (target ≤ 1.2)': verdict(p99Ratio),
    });
  } finally {
    await platform.stop();
  }
}
