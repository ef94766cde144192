import { performance } from 'node:perf_hooks';

/**
 * Calls `onIdle` once when `ms` pass without a `touch()`. While held (the upload is waiting on our
 * own storage, so the client is not being read and cannot be blamed) the clock stops; it restarts
 * in full when the last hold is released.
 */
export class IdleTimer {
  readonly #ms: number;
  readonly #onIdle: () => void;
  #timer: NodeJS.Timeout | undefined;
  #lastActivity = performance.now();
  #holds = 0;
  #stopped = false;

  constructor(ms: number, onIdle: () => void) {
    this.#ms = ms;
    this.#onIdle = onIdle;
    this.#arm(ms);
  }

  /** Bytes arrived. Only a timestamp: this runs for every chunk of every upload. */
  touch(): void {
    this.#lastActivity = performance.now();
  }

  /** Stops the clock until the returned function is called (once). */
  hold(): () => void {
    this.#holds++;
    clearTimeout(this.#timer);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds > 0) return;
      this.#lastActivity = performance.now();
      this.#arm(this.#ms);
    };
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #arm(delay: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    // Timers run before I/O in an event-loop turn: after a busy stretch of our own, the timer could
    // expire before the client's waiting bytes are read. The check runs after the next I/O phase.
    this.#timer = setTimeout(() => setImmediate(() => this.#check()), delay);
  }

  #check(): void {
    if (this.#stopped || this.#holds > 0) return;
    const silent = performance.now() - this.#lastActivity;
    if (silent < this.#ms) return this.#arm(this.#ms - silent);
    this.#stopped = true;
    this.#onIdle();
  }
}
