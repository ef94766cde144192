/** A worker beats every 5 s (worker/liveness.ts); one silent for 20 s is dead. */
export const heartbeatEveryMs = 5000;
export const staleAfterSeconds = 20;
