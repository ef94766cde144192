import type pg from 'pg';
import type { DatabasePool } from 'slonik';

import type { PoolConnections } from '../observability/poolGauge.ts';

/** A slonik pool's figures (its own bookkeeping: no query, no I/O). */
export function slonikPoolConnections(name: string, pool: DatabasePool): PoolConnections {
  const state = pool.state();
  return {
    pool: name,
    idle: state.idleConnections,
    active: state.acquiredConnections,
    waiting: state.waitingClients,
  };
}

/** A pg pool's figures (graphile-worker's runners fetch and complete jobs on these). */
export function pgPoolConnections(name: string, pool: pg.Pool): PoolConnections {
  return {
    pool: name,
    idle: pool.idleCount,
    active: pool.totalCount - pool.idleCount,
    waiting: pool.waitingCount,
  };
}
