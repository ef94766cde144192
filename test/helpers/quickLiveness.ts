/**
 * Worker liveness for tests that kill a worker but are not about how long its death takes to notice:
 * a beat a second and death after 5 s of silence (the production 5 s / 20 s is
 * test/integration/worker/liveness.crash's subject). Every process of such a test takes the same
 * values, as docs/architecture.md requires; 5 s of silence stays well beyond a busy machine's pauses.
 */
export const quickLivenessEnv = { WORKER_HEARTBEAT_MS: '1000', WORKER_STALE_AFTER_MS: '5000' } as const;

/**
 * The same for a fleet whose live workers also go silent for seconds on purpose (stopped with
 * SIGSTOP, or cut off by a PostgreSQL restart): 10 s, so such a pause is not taken for a death.
 */
export const quickFleetLivenessEnv = { ...quickLivenessEnv, WORKER_STALE_AFTER_MS: '10000' } as const;
