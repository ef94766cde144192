import type { TextDelta } from '../../shared/generation/textDeltas.ts';
import { KeyedChannel, type NotificationHub } from '../../shared/realtime/pubsub.ts';

/**
 * Fans the `text:delta` channel out to this process's text streams by job id. It LISTENs from the
 * moment it is built (with the app), not per stream: a first stream must not lose its opening deltas
 * to the round trip of a LISTEN issued after its job was queued.
 */
export class TextDeltaRelay {
  private readonly deltas: KeyedChannel<'text:delta'>;

  constructor(hub: NotificationHub) {
    this.deltas = new KeyedChannel(hub, 'text:delta');
    void this.deltas.listen();
  }

  on(jobId: string, listener: (delta: TextDelta) => void): () => void {
    return this.deltas.on(jobId, listener);
  }
}
