import { Logger as GraphileLogger } from 'graphile-worker';

import type { Logger } from '../shared/observability/logger.ts';

/**
 * Routes graphile-worker's own log lines into our pino logger, so LOG_LEVEL governs them too and
 * their `error` fields and messages (which interpolate errors and options) pass through its error
 * serializer and secret scrubbing like every other line.
 */
export function graphileLogger(logger: Logger): GraphileLogger {
  return new GraphileLogger((scope) => (level, message, meta) => {
    const fields = { scope, ...meta };
    switch (level) {
      case 'error':
        logger.error(fields, message);
        break;
      case 'warning':
        logger.warn(fields, message);
        break;
      case 'info':
        logger.info(fields, message);
        break;
      default:
        logger.debug(fields, message);
    }
  });
}
