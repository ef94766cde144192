import { EventEmitter } from 'node:events';

/**
 * What this process's streamed uploads hold right now: uploads still being received and the bytes
 * they keep in memory (part buffers, parts on their way to storage). Both return to 0 once every
 * upload has ended, however it ended; one gauge per api process, built with its dependencies.
 */
export class UploadGauge {
  #receiving = 0;
  #bufferedBytes = 0;
  readonly #events = new EventEmitter().setMaxListeners(0);

  get receiving(): number {
    return this.#receiving;
  }

  get bufferedBytes(): number {
    return this.#bufferedBytes;
  }

  /** Counts an upload as being received; the returned function ends it (once). */
  begin(): () => void {
    this.#receiving++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#receiving--;
      this.#changed();
    };
  }

  /** Adds (or, negative, removes) bytes held in memory. */
  hold(bytes: number): void {
    this.#bufferedBytes += bytes;
    if (bytes < 0) this.#changed();
  }

  /** Resolves as soon as nothing is being received and no byte is held. */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!this.#isIdle()) return;
        this.#events.off('change', check);
        resolve();
      };
      this.#events.on('change', check);
    });
  }

  #isIdle(): boolean {
    return this.#receiving === 0 && this.#bufferedBytes === 0;
  }

  #changed(): void {
    this.#events.emit('change');
  }
}
