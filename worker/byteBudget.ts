/**
 * Bounds how many bytes of something a process holds at once (here: uploaded job inputs read into
 * memory). Callers take their share before reading and give it back when done; a caller that does
 * not fit waits, in arrival order, so a large input is not starved by a stream of small ones. A
 * share larger than the whole budget is capped to it: such a caller runs alone.
 */
export class ByteBudget {
  private readonly capacity: number;
  private used = 0;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Resolves with the function that gives the share back (idempotent) once `bytes` fit. */
  async take(bytes: number): Promise<() => void> {
    const share = Math.min(Math.max(0, bytes), this.capacity);
    if (this.waiting.length > 0 || this.used + share > this.capacity) {
      await new Promise<void>((grant) => this.waiting.push({ bytes: share, grant }));
    } else {
      this.used += share;
    }
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.used -= share;
      this.admit();
    };
  }

  /** Bytes held now. */
  get inUse(): number {
    return this.used;
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.bytes <= this.capacity) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      next.grant();
    }
  }
}
