import { freePort } from '../../shared/embedded/freePort.ts';
import { type Spawned, spawnNode } from './processes.ts';

export type Fleet = {
  webs: { origin: string; process: Spawned }[];
  workers: Spawned[];
  /** Another worker process, as a dyno manager replaces a dead one. */
  addWorker(): Promise<Spawned>;
  stop(): Promise<void>;
};

/**
 * The Procfile's processes on the database and S3 server `env` names: `webs` api processes (each on
 * a loopback port of its own, the first one's origin as PUBLIC_BASE_URL) and `workers` workers, the
 * n-th worker started (from 0, replacements included) with `workerEnv(n)` on top (its METRICS_PORT).
 */
export async function startFleet(
  env: Record<string, string>,
  size: { webs: number; workers: number },
  options: { workerEnv?: (index: number) => Record<string, string> } = {},
): Promise<Fleet> {
  const ports = await Promise.all(Array.from({ length: size.webs }, () => freePort()));
  const shared = { ...env, PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}` };
  const webs = ports.map((port) => ({
    origin: `http://127.0.0.1:${port}`,
    process: spawnNode('api/server.ts', { ...shared, PORT: String(port) }),
  }));
  const workers: Spawned[] = [];
  const spawned: Spawned[] = [];
  const startWorker = async () => {
    const worker = spawnNode('worker/main.ts', { ...shared, ...options.workerEnv?.(spawned.length) });
    spawned.push(worker);
    await worker.waitFor(/worker started/, 120_000);
    return worker;
  };
  const started = Promise.all(Array.from({ length: size.workers }, () => startWorker()));
  const fleet: Fleet = {
    webs,
    workers,
    addWorker: async () => {
      const worker = await startWorker();
      workers.push(worker);
      return worker;
    },
    stop: async () => {
      await Promise.all([...webs.map((w) => w.process.stop()), ...workers.map((w) => w.stop())]);
    },
  };
  try {
    await Promise.all(webs.map((w) => w.process.waitFor(/api listening/, 120_000)));
    workers.push(...(await started));
  } catch (error) {
    for (const p of [...webs.map((w) => w.process), ...spawned]) p.child.kill('SIGKILL');
    throw error;
  }
  return fleet;
}
