import { pbkdf2 } from 'node:crypto';

import { createLogger } from '../../shared/observability/logger.ts';

/**
 * Logs `first` and `second` to standard output and exits at once, with every thread of libuv's
 * pool busy as under load: a process that logs its last lines and exits, as a drain ends.
 */
const logger = createLogger('info', 'logger-exit');
for (let thread = 0; thread < 4; thread++) pbkdf2('password', 'salt', 2_000_000, 32, 'sha256', () => {});
logger.info('first');
logger.info('second');
process.exit(0);
