type Pending<I, O> = { input: I; resolve(output: O): void; reject(error: unknown): void };

/**
 * Group commit for one kind of statement. Calls made in one turn of the event loop go out together,
 * as one statement, once that turn ends (a worker handed a batch of jobs starts them all in one
 * turn: sent at once, the first of them went out alone, doubling the statements per batch). Calls
 * made while `maxInFlight` batches are already running wait and go out with every other call made
 * meanwhile. Under load this turns N round trips, plans and commits into one; a lone caller waits
 * only for the end of the current turn.
 *
 * `run` gets the inputs of a batch and returns one output per input, in order. A failed batch of
 * several is retried one input at a time, so one bad input fails only its own caller.
 */
export class Batcher<I, O> {
  private readonly run: (inputs: I[]) => Promise<O[]>;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private queue: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(run: (inputs: I[]) => Promise<O[]>, options: { maxInFlight?: number; maxBatch?: number } = {}) {
    this.run = run;
    // One batch at a time by default: calls arriving meanwhile fill the next one. With two, most
    // batches held a single call at 500 calls/s, and every extra statement costs PostgreSQL a
    // round trip, an execution and a commit.
    this.maxInFlight = options.maxInFlight ?? 1;
    this.maxBatch = options.maxBatch ?? 100;
  }

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.pump();
      });
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async send(batch: Pending<I, O>[]): Promise<void> {
    try {
      const outputs = await this.run(batch.map((p) => p.input));
      batch.forEach((p, i) => p.resolve(outputs[i]!));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      await Promise.all(batch.map((p) => this.send([p])));
    }
  }
}
