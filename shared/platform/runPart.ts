import { type Config, configSecrets, loadConfig } from '../config/config.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { reportBucket } from '../storage/bucketSetup.ts';
import { ObjectStore } from '../storage/objectStore.ts';
import { resolveServices, type Services } from './services.ts';
import { stopOnSignals } from './stopOnSignals.ts';

/**
 * A process that runs one part of the platform (`npm run start:web`, `start:worker`) on its
 * services. Signals are handled from the first moment; stopping stops the part before the services
 * it uses, and whatever had started by then; `afterStop` runs last (tracing exports its last spans).
 * It checks the S3 bucket at boot without waiting for the answer (see reportBucket).
 */
export async function runPart<Part extends { stop(): Promise<void> }>(
  name: string,
  start: (config: Config, services: Services, logger: Logger) => Promise<Part>,
  started: (part: Part, config: Config, logger: Logger) => void,
  options: { afterStop?: () => Promise<void> } = {},
): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, name, { secrets: configSecrets(config) });
  const running: { services?: Services; part?: Part } = {};
  stopOnSignals(logger, async () => {
    if (running.part) {
      await running.part.stop();
      logger.info(`${name} stopped`);
    }
    await running.services?.stop();
    await options.afterStop?.();
  });
  running.services = await resolveServices(config, { logger });
  // Release creates the bucket; a part started without it (release skipped, the bucket deleted, S3
  // down) says so once and serves what does not need storage, answering 503 for what does.
  if (config.s3.endpoint !== undefined) void reportBucket(new ObjectStore(running.services.s3), logger);
  running.part = await start(config, running.services, logger);
  started(running.part, config, logger);
}
