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

export type PoolOptions = {
  maxPoolSize?: number;
  name?: string;
  /**
   * Plan prepared statements (sql.prepared) on every execution, from current statistics, instead
   * of reusing a generic plan: a generic plan made while a table was still small keeps scanning it
   * whole as it grows, until the next ANALYZE. For pools whose prepared statements look rows up in
   * growing tables (the worker's, by job id); not for the api's, which mostly inserts and whose
   * graphile-worker add_jobs calls would then re-plan every statement inside it.
   */
  customPlans?: boolean;
};

function withSessionSettings(connectionUri: string, options: PoolOptions): string {
  if (!options.customPlans) return connectionUri;
  const url = new URL(connectionUri);
  const given = url.searchParams.get('options');
  url.searchParams.set('options', [given, '-c plan_cache_mode=force_custom_plan'].filter(Boolean).join(' '));
  return url.toString();
}

export async function makePool(connectionUri: string, options: PoolOptions = {}): Promise<DatabasePool> {
  return createPool(withSessionSettings(connectionUri, options), {
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
