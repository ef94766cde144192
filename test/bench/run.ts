import brainSearchBench from './brainSearch.ts';
import compatChatBench from './compatChat.ts';
import consoleLogBench from './consoleLog.ts';
import fallbackBench from './fallback.ts';
import filesBench from './files.ts';
import gatewayBench from './gateway.ts';
import { type BenchContext, makeBenchContext } from './harness.ts';
import jobsBench from './jobs.ts';
import mcpBench from './mcp.ts';
import { mcpListenLatency } from './mcpListen.ts';
import meBench from './me.ts';
import metricsBench from './metrics.ts';
import poolerBench from './pooler.ts';
import responseCacheBench from './responseCache.ts';
import signInFloodBench from './signInFlood.ts';
import taskBacklogBench from './taskBacklog.ts';
import { idleStreams, replyLatency } from './tasks.ts';
import textBench from './text.ts';
import tracingBench from './tracing.ts';
import webhooksBench from './webhooks.ts';

/** Scenarios in run order; each capability adds its own. */
const scenarios: { name: string; run: (ctx: BenchContext) => Promise<void> }[] = [
  { name: 'GET /me', run: meBench },
  { name: 'metrics: GET /me on vs off', run: metricsBench },
  { name: 'POST /text', run: textBench },
  { name: 'tasks: reply latency', run: replyLatency },
  { name: 'tasks: idle streams', run: idleStreams },
  { name: 'task backlog beside POST /text', run: taskBacklogBench },
  { name: 'jobs', run: jobsBench },
  { name: 'brain search', run: brainSearchBench },
  { name: 'files', run: filesBench },
  { name: 'mcp get_task', run: mcpBench },
  { name: 'mcp listen: commit → notification', run: mcpListenLatency },
  { name: 'console request log', run: consoleLogBench },
  { name: 'sign-in flood', run: signInFloodBench },
  { name: 'GET /me: tracing on vs off', run: tracingBench },
  { name: 'provider fallback', run: fallbackBench },
  { name: 'pooler: PgBouncer vs direct', run: poolerBench },
  { name: 'webhooks: one endpoint', run: webhooksBench },
  { name: 'response cache: hit vs test key', run: responseCacheBench },
  { name: 'gateway: own cost over direct', run: gatewayBench },
  { name: 'compatible chat vs POST /text', run: compatChatBench },
];

// Scenarios whose names contain any of the comma-separated words given (all when none is).
const only = process.argv[2]?.split(',');
const ctx = await makeBenchContext();
try {
  for (const scenario of scenarios) {
    if (only && !only.some((word) => scenario.name.includes(word))) continue;
    await scenario.run(ctx);
  }
} finally {
  await ctx.close();
}
process.exit(0);
