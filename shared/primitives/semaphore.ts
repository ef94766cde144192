/**
 * At most `permits` runs at once, and at most `maxWaiting` more waiting in line (first come, first
 * served); a run beyond both is refused at once instead of queued, so a flood costs no memory here.
 */
export class Semaphore {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly permits: number;
  private readonly maxWaiting: number;

  constructor(permits: number, maxWaiting: number) {
    this.permits = permits;
    this.maxWaiting = maxWaiting;
  }

  /**
   * Runs `work` once a permit is free; its permit is given back however it ends (rejections included).
   * @returns work's promise, or null (work never called) when every permit is held and the line is full.
   */
  run<T>(work: () => Promise<T>): Promise<T> | null {
    if (this.running >= this.permits && this.waiting.length >= this.maxWaiting) return null;
    return this.hold(work);
  }

  private async hold<T>(work: () => Promise<T>): Promise<T> {
    // Decided synchronously, before the first await: the check in run() still holds here.
    if (this.running < this.permits) this.running += 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The permit passes straight to the next in line, so nobody can overtake it in between.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
