import type pg from 'pg';
import type { DatabasePool } from 'slonik';

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
