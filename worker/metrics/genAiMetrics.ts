import { Histogram, type Registry } from 'prom-client';

import { hasExemplars, observeTraced } from '../../shared/observability/metricsRegistry.ts';

/** The GenAI conventions' attributes as Prometheus labels (dots become underscores). */
type GenAiLabel = 'gen_ai_operation_name' | 'gen_ai_provider_name' | 'gen_ai_request_model';

/** One model call as the GenAI client metrics describe it: the route entry's provider and model. */
export type GenAiCall = { operation: string; provider: string; requestModel: string };

// The GenAI conventions' advised bucket boundaries.
const tokenBuckets = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
const secondBuckets = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/**
 * The OpenTelemetry GenAI client metrics in Prometheus form, beside the svc_ families:
 * gen_ai_client_token_usage (gen_ai.client.token.usage, by token type `input` / `output`),
 * gen_ai_client_operation_duration_seconds (gen_ai.client.operation.duration) and
 * gen_ai_client_time_to_first_chunk_seconds (gen_ai.client.operation.time_to_first_chunk, streamed
 * text only). Model calls only (the route entries' providers), not OCR, video or webhooks; the
 * labels are configured names, a closed set. Observed inside the call's span: with tracing on each
 * bucket's exemplar is a trace of it.
 */
export class GenAiMetrics {
  private readonly tokens: Histogram<GenAiLabel | 'gen_ai_token_type'>;
  private readonly duration: Histogram<GenAiLabel>;
  private readonly firstChunk: Histogram<GenAiLabel>;

  constructor(registry: Registry) {
    const common = { registers: [registry], enableExemplars: hasExemplars(registry) };
    const labelNames: GenAiLabel[] = [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
    ];
    this.tokens = new Histogram({
      name: 'gen_ai_client_token_usage',
      help: 'Tokens used per model call, by GenAI operation, provider, requested model and token type.',
      labelNames: [...labelNames, 'gen_ai_token_type'],
      buckets: tokenBuckets,
      ...common,
    });
    this.duration = new Histogram({
      name: 'gen_ai_client_operation_duration_seconds',
      help: 'Duration of model calls (streamed replies until their last chunk), by GenAI operation, provider and requested model.',
      labelNames,
      buckets: secondBuckets,
      ...common,
    });
    this.firstChunk = new Histogram({
      name: 'gen_ai_client_time_to_first_chunk_seconds',
      help: 'Time from a streamed model call to its first chunk, by GenAI operation, provider and requested model.',
      labelNames,
      buckets: secondBuckets,
      ...common,
    });
  }

  private static labels(call: GenAiCall) {
    return {
      gen_ai_operation_name: call.operation,
      gen_ai_provider_name: call.provider,
      gen_ai_request_model: call.requestModel,
    };
  }

  /** A call that ended: its duration, and its tokens where the provider reported them. */
  observeCall(call: GenAiCall, seconds: number, usage: { input?: number; output?: number }): void {
    const labels = GenAiMetrics.labels(call);
    observeTraced(this.duration, labels, seconds);
    for (const [type, count] of [
      ['input', usage.input],
      ['output', usage.output],
    ] as const) {
      if (count !== undefined) observeTraced(this.tokens, { ...labels, gen_ai_token_type: type }, count);
    }
  }

  observeFirstChunk(call: GenAiCall, seconds: number): void {
    observeTraced(this.firstChunk, GenAiMetrics.labels(call), seconds);
  }
}
