import { startEmbeddedPostgres } from '../../shared/embedded/postgres.ts';

/**
 * A process that starts an embedded PostgreSQL under PG_DATA_DIR and then only waits, for tests of
 * what becomes of the server when its owner dies. Prints `ready` once the server accepts connections.
 */
await startEmbeddedPostgres(process.env.PG_DATA_DIR!, { fast: true });
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
