import type { NotificationHub } from '../../shared/pubsub.ts';
import { type TextDelta, textDeltaChannel, textDeltaPayload } from '../../shared/textDeltas.ts';

/**
 * Fans the `text:delta` channel out to this process's text streams by job id. It LISTENs from the
 * moment the app is built, not per stream: a first stream must not lose its opening deltas to the
 * round trip of a LISTEN issued after its job was queued.
 */
export class TextDeltaRelay {
  private readonly byJob = new Map<string, (delta: TextDelta) => void>();

  constructor(hub: NotificationHub) {
    hub.subscribe(textDeltaChannel, (raw) => this.dispatch(raw));
  }

  on(jobId: string, listener: (delta: TextDelta) => void): () => void {
    this.byJob.set(jobId, listener);
    return () => {
      if (this.byJob.get(jobId) === listener) this.byJob.delete(jobId);
    };
  }

  private dispatch(raw: string): void {
    let parsed: ReturnType<typeof textDeltaPayload.safeParse>;
    try {
      parsed = textDeltaPayload.safeParse(JSON.parse(raw));
    } catch {
      return;
    }
    if (!parsed.success) return;
    this.byJob.get(parsed.data.id)?.(parsed.data);
  }
}
