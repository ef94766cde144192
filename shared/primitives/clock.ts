/** Milliseconds since the epoch; injected where expiry is decided, so tests can move time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

export const isoAt = (clock: Clock, plusMs = 0): string => new Date(clock() + plusMs).toISOString();
