import {
  createPool,
  type DatabasePool,
  type DriverTypeParser,
  type Interceptor,
  SchemaValidationError,
} from 'slonik';

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

export type PoolOptions = { maxPoolSize?: number; name?: string };

/**
 * Prepared statements (sql.prepared) are parsed and rewritten once per connection but planned on
 * every execution: a plan cached while a table is still small would keep scanning it whole as it
 * grows, until the next ANALYZE.
 */
function withSessionSettings(connectionUri: string): string {
  const url = new URL(connectionUri);
  const given = url.searchParams.get('options');
  url.searchParams.set('options', [given, '-c plan_cache_mode=force_custom_plan'].filter(Boolean).join(' '));
  return url.toString();
}

/**
 * Opens a slonik pool. The connection reset is a no-op: we never set session state outside
 * transactions, and DISCARD ALL on every release costs ~15 % of a simple request's throughput.
 */
export async function makePool(connectionUri: string, options: PoolOptions = {}): Promise<DatabasePool> {
  return createPool(withSessionSettings(connectionUri), {
    interceptors: [resultParserInterceptor],
    typeParsers,
    maxPoolSize: options.maxPoolSize ?? 10,
    poolName: options.name ?? 'main',
    resetConnection: async () => {},
    // Bounded so a stuck statement or an abandoned transaction cannot hold a connection forever.
    statementTimeout: 60_000,
    idleInTransactionSessionTimeout: 60_000,
    idleTimeout: 30_000,
    connectionTimeout: 10_000,
    captureStackTrace: false,
  });
}
