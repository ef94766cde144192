import { Gauge, type Registry } from 'prom-client';

/** One connection pool's figures at this moment (svc_db_pool_connections). */
export type PoolConnections = {
  pool: string;
  /** Open and free. */
  idle: number;
  /** Lent out to a query or a transaction. */
  active: number;
  /** Callers queued for a connection: the pool is exhausted. */
  waiting: number;
};

type PoolSource = () => Iterable<PoolConnections>;

// One gauge per registry, fed by every part of the process: under npm start the api and the worker
// add their pools to the same registry, which may hold a metric name only once.
const sourcesOf = new WeakMap<Registry, Set<PoolSource>>();

function createPoolGauge(registry: Registry): Set<PoolSource> {
  const sources = new Set<PoolSource>();
  sourcesOf.set(registry, sources);
  new Gauge({
    name: 'svc_db_pool_connections',
    help: "Connections of this process's database pools, by pool and state (idle, active, waiting callers).",
    labelNames: ['pool', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const read of sources) {
        for (const { pool, idle, active, waiting } of read()) {
          this.set({ pool, state: 'idle' }, idle);
          this.set({ pool, state: 'active' }, active);
          this.set({ pool, state: 'waiting' }, waiting);
        }
      }
    },
  });
  return sources;
}

/**
 * Adds `source`'s pools to svc_db_pool_connections{pool,state} (state: idle, active, waiting), read
 * when the registry is collected, so no timer runs between scrapes. Returns what takes them out
 * again (once the pools have ended).
 */
export function registerPoolGauge(registry: Registry, source: PoolSource): () => void {
  const sources = sourcesOf.get(registry) ?? createPoolGauge(registry);
  sources.add(source);
  return () => {
    sources.delete(source);
  };
}
