import type { Logger } from '../observability/logger.ts';

const stopSignals = ['SIGTERM', 'SIGINT'] as const;

/**
 * Runs `stop` on the first SIGTERM or SIGINT, then exits: 0, or 1 when a step of `stop` threw.
 * Later signals only log: one stop is often signalled twice — a terminal's Ctrl-C reaches every
 * process of the foreground group and npm forwards its own copy to its script, a supervisor signals
 * both npm and its process group — and the second must not cut the drain short (Node's default
 * action for a signal without a listener is to exit at once).
 */
export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.info({ signal }, 'already stopping');
      return;
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'stopping failed');
        process.exit(1);
      },
    );
  };
  for (const signal of stopSignals) process.on(signal, onSignal);
}
