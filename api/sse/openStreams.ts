import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';

export type StreamKind = 'text' | 'task' | 'mcp';

/**
 * The server-sent event streams this process has open, by kind (svc_sse_streams). A stream counts
 * from the moment its headers go out until its response closes, which Node reports once however
 * it ends: finished, cut for a stalled reader, the client gone, the server closing its sockets.
 * Emits `change` after every change, for whoever waits on a count.
 */
export class OpenStreams extends EventEmitter<{ change: [kind: StreamKind, open: number] }> {
  private readonly open: Record<StreamKind, number> = { text: 0, task: 0, mcp: 0 };

  count(kind: StreamKind): number {
    return this.open[kind];
  }

  /** Counts `res` as an open stream of `kind` until it closes. */
  track(kind: StreamKind, res: ServerResponse): void {
    // Closed already (the client left while the stream was being set up): 'close' will not come again.
    if (res.closed || res.destroyed) return;
    this.open[kind]++;
    this.emit('change', kind, this.open[kind]);
    res.once('close', () => {
      this.open[kind]--;
      this.emit('change', kind, this.open[kind]);
    });
  }
}
