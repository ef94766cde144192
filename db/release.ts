import { loadConfig } from '../shared/config/config.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { migrate, MigrationChangedError } from './migrate.ts';

/** Procfile `release`: our migrations, then graphile-worker's schema. */
const config = loadConfig();
const services = await resolveServices(config, { needS3: false });
try {
  await migrate(services.directDatabaseUrl, (line) => process.stdout.write(`${line}\n`));
} catch (error) {
  // A changed released migration stops the release with the reason alone (no stack to dig through).
  if (!(error instanceof MigrationChangedError)) throw error;
  process.stderr.write(`release stopped: ${error.message}\n`);
  process.exitCode = 1;
} finally {
  await services.stop();
}
