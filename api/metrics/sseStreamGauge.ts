import { Gauge, type Registry } from 'prom-client';

import type { OpenStreams, StreamKind } from '../sse/openStreams.ts';

const kinds: readonly StreamKind[] = ['text', 'task', 'mcp'];

/** svc_sse_streams{kind}: the event streams this process has open, read at collection. */
export function registerSseStreamGauge(registry: Registry, streams: OpenStreams): void {
  new Gauge({
    name: 'svc_sse_streams',
    help: 'Server-sent event streams this process has open, by kind (text: streamed POST /text, task: task streams).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      for (const kind of kinds) this.set({ kind }, streams.count(kind));
    },
  });
}
