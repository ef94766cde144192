import { loadConfig } from '../shared/config/config.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { BucketSetupError, prepareBucket } from '../shared/storage/bucketSetup.ts';
import { ObjectStore } from '../shared/storage/objectStore.ts';
import { migrate, MigrationChangedError } from './migrate.ts';

/**
 * Procfile `release`: the S3 bucket created when missing (S3_ENDPOINT set; the embedded server makes
 * its own), then our migrations and graphile-worker's schema. Either failing stops the release with
 * the reason alone on stderr (no stack to dig through) and a non-zero exit, before any web or worker
 * dyno of the new release starts.
 */
const config = loadConfig();
const services = await resolveServices(config, { needS3: false });
const out = (line: string) => process.stdout.write(`${line}\n`);
try {
  if (config.s3.endpoint !== undefined) {
    const store = new ObjectStore(services.s3);
    const created = await prepareBucket(store);
    const { bucket, endpoint } = store.target;
    out(`S3 bucket '${bucket}' at ${endpoint} ${created ? 'created' : 'exists'}`);
  }
  await migrate(services.directDatabaseUrl, out);
} catch (error) {
  if (!(error instanceof MigrationChangedError || error instanceof BucketSetupError)) throw error;
  process.stderr.write(`release stopped: ${error.message}\n`);
  process.exitCode = 1;
} finally {
  await services.stop();
}
