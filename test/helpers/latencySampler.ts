import { parentPort, workerData } from 'node:worker_threads';

/**
 * A client in a thread of its own (a test's other traffic does not delay its timers or its reads):
 * after a few calls to warm up, one GET every `intervalMs`, each on its own, so a stalled answer does not hold back the next
 * request and a stall shows in every sample it delays. Posts 'ready', samples until told 'stop',
 * then posts every latency (ms) and status.
 */
export type SamplerOptions = { url: string; headers: Record<string, string>; intervalMs: number };
export type SamplerResult = { latencies: number[]; statuses: number[] };

const options = workerData as SamplerOptions;
const samples: Promise<{ ms: number; status: number }>[] = [];

async function sample(): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const res = await fetch(options.url, { headers: options.headers });
  await res.arrayBuffer();
  return { ms: performance.now() - started, status: res.status };
}

parentPort!.once('message', async (message: string) => {
  if (message !== 'start') throw new Error(`sampler: unexpected ${message}`);
  // A few answers first, one at a time: a connection open and the server's path warm before timing.
  for (let i = 0; i < 10; i++) await sample();
  const timer = setInterval(() => samples.push(sample()), options.intervalMs);
  parentPort!.once('message', () => {
    clearInterval(timer);
    void Promise.all(samples).then((done) => {
      parentPort!.postMessage({
        latencies: done.map((s) => s.ms),
        statuses: done.map((s) => s.status),
      } satisfies SamplerResult);
    });
  });
  parentPort!.postMessage('started');
});
