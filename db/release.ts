import { loadConfig } from '../shared/config.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { migrate } from './migrate.ts';

/** Procfile `release`: our migrations, then graphile-worker's schema. */
const config = loadConfig();
const services = await resolveServices(config, { needS3: false });
try {
  await migrate(services.databaseUrl, (line) => process.stdout.write(`${line}\n`));
} finally {
  await services.stop();
}
