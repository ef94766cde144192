import { setTimeout as sleep } from 'node:timers/promises';

import type { Runner } from 'graphile-worker';

import type { Logger } from '../shared/observability/logger.ts';

// A runner that cannot start (the database still away) is tried again this often, at most.
const firstRestartDelayMs = 1000;
const maxRestartDelayMs = 5000;

/**
 * One lane's graphile-worker runner, started again whenever it stops on its own. graphile-worker
 * stops a runner's pool when it cannot write a job's completion or failure ("queue is in an
 * inconsistent state; aborting"), which a PostgreSQL restart causes; the process would then live on,
 * beating, with that lane dead in it. The new runner starts after 1 s, and while it cannot start
 * (the database is still away) is tried again every few seconds (at most 5 s apart). What the
 * stopped pool left locked is released by the reaper (worker/liveness.ts).
 */
export class SupervisedRunner {
  readonly #lane: string;
  readonly #start: () => Promise<Runner>;
  readonly #logger: Logger;
  readonly #onRestart: (runner: Runner) => void;
  #current: Runner;
  #ended = false;
  #stopping = false;
  #restarting: Promise<void> | undefined;
  readonly #stopped = new AbortController();

  private constructor(
    lane: string,
    start: () => Promise<Runner>,
    logger: Logger,
    onRestart: (r: Runner) => void,
    first: Runner,
  ) {
    this.#lane = lane;
    this.#start = start;
    this.#logger = logger;
    this.#onRestart = onRestart;
    this.#current = first;
    this.#watch(first);
  }

  /**
   * Starts the lane's runner (throwing what its first start throws) and watches it. `onRestart` is
   * told each new runner.
   */
  static async start(
    lane: string,
    start: () => Promise<Runner>,
    logger: Logger,
    onRestart: (runner: Runner) => void = () => {},
  ): Promise<SupervisedRunner> {
    return new SupervisedRunner(lane, start, logger, onRestart, await start());
  }

  get runner(): Runner {
    return this.#current;
  }

  #watch(runner: Runner) {
    this.#ended = false;
    const ended = () => {
      if (runner !== this.#current) return;
      this.#ended = true;
      if (this.#stopping) return;
      this.#logger.error({ lane: this.#lane }, 'a worker runner stopped on its own; starting it again');
      this.#restarting = this.#restart();
    };
    runner.promise.then(ended, ended);
  }

  /**
   * Starts the lane's runner again without waiting for the current one, whose pool could not be
   * stopped (see watchStuckPools): it is left behind, and what it has locked is released by the reaper.
   */
  replace(): void {
    if (this.#stopping || this.#ended) return;
    this.#ended = true;
    this.#restarting = this.#restart();
  }

  async #restart(): Promise<void> {
    for (let delay = firstRestartDelayMs; ; delay = Math.min(delay * 2, maxRestartDelayMs)) {
      await sleep(delay, undefined, { signal: this.#stopped.signal }).catch(() => {});
      if (this.#stopping) return;
      try {
        const runner = await this.#start();
        if (this.#stopping) {
          await runner.stop();
          return;
        }
        this.#current = runner;
        this.#watch(runner);
        this.#onRestart(runner);
        this.#logger.info({ lane: this.#lane }, 'worker runner started again');
        return;
      } catch (error) {
        this.#logger.warn(
          { err: error, lane: this.#lane },
          'starting a worker runner again failed; retrying',
        );
      }
    }
  }

  /** Stops the runner for good: its running jobs finish (or are handed back) first. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#stopped.abort();
    await this.#restarting;
    if (!this.#ended) await this.#current.stop();
  }
}
