import { createPgDriverFactory } from '@slonik/pg-driver';
import {
  createPool,
  type DatabasePool,
  type DriverTypeParser,
  type Interceptor,
  SchemaValidationError,
} from 'slonik';

import { type SessionBounds, transactionPoolerDriver } from './transactionPooler.ts';

/** Validates each row against the query's `sql.type(schema)` (slonik's documented result-parser pattern). */
const resultParserInterceptor: Interceptor = {
  name: 'result-parser',
  transformRowAsync: async (context, query, row) => {
    const parser = context.resultParser;
    if (!parser) return row;
    const outcome = await parser['~standard'].validate(row);
    if (outcome.issues) throw new SchemaValidationError(query, row, outcome.issues);
    return outcome.value as typeof row;
  },
};

const toIso = (value: string) => new Date(value).toISOString();

// Money and counters fit in 2^53; numbers keep JSON and arithmetic simple.
const typeParsers: DriverTypeParser[] = [
  { name: 'int8', parse: (v) => Number(v) },
  { name: 'numeric', parse: (v) => Number(v) },
  { name: 'timestamptz', parse: toIso },
  { name: 'timestamp', parse: toIso },
  { name: 'date', parse: (v) => v },
];

/**
 * What stands between the pool and PostgreSQL: `none` (PostgreSQL itself, or a pooler that keeps one
 * server session per client) or `transaction` (a transaction-pooling proxy such as PgBouncer in
 * `pool_mode = transaction`: no session state, see transactionPooler.ts).
 */
export type DatabasePooler = 'none' | 'transaction';

export type PoolOptions = {
  maxPoolSize?: number;
  name?: string;
  /** Run before the result parser (tests count or slow down statements with them). */
  interceptors?: Interceptor[];
  pooler?: DatabasePooler;
  /** Shorter bounds for tests of the bounds themselves. */
  bounds?: SessionBounds;
};

// Bounded so a stuck statement or an abandoned transaction cannot hold a connection forever.
const defaultBounds: SessionBounds = { statementTimeoutMs: 60_000, idleInTransactionTimeoutMs: 60_000 };

export async function makePool(connectionUri: string, options: PoolOptions = {}): Promise<DatabasePool> {
  const bounds = options.bounds ?? defaultBounds;
  const sessionless = options.pooler === 'transaction';
  return createPool(connectionUri, {
    interceptors: [...(options.interceptors ?? []), resultParserInterceptor],
    typeParsers,
    maxPoolSize: options.maxPoolSize ?? 10,
    poolName: options.name ?? 'main',
    resetConnection: async () => {},
    // slonik sends these two as startup parameters, which a transaction pooler refuses (PgBouncer:
    // "unsupported startup parameter"): there each transaction sets them instead.
    ...(sessionless
      ? {
          driverFactory: transactionPoolerDriver(createPgDriverFactory(), bounds),
          statementTimeout: 'DISABLE_TIMEOUT',
          idleInTransactionSessionTimeout: 'DISABLE_TIMEOUT',
        }
      : {
          statementTimeout: bounds.statementTimeoutMs,
          idleInTransactionSessionTimeout: bounds.idleInTransactionTimeoutMs,
        }),
    idleTimeout: 30_000,
    connectionTimeout: 10_000,
    captureStackTrace: false,
  });
}
