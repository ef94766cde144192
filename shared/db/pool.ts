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
  /** Run before the result parser (tests count or slow down statements with them). */
  interceptors?: Interceptor[];
};

export async function makePool(connectionUri: string, options: PoolOptions = {}): Promise<DatabasePool> {
  return createPool(connectionUri, {
    interceptors: [...(options.interceptors ?? []), resultParserInterceptor],
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
