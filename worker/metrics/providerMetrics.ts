import { Counter, Histogram, type Registry } from 'prom-client';

import { hasExemplars, observeTraced } from '../../shared/observability/metricsRegistry.ts';
import { GenAiMetrics } from './genAiMetrics.ts';

/** What a provider call was for: a model capability, or a webhook delivery. */
export type ProviderCapability =
  'text' | 'image' | 'embedding' | 'transcription' | 'ocr' | 'video' | 'webhook';

/** `cancelled`: the job was cancelled or the worker stopped mid-call. */
export type ProviderOutcome = 'ok' | 'error' | 'cancelled';

export type ProviderCall = { provider: string; capability: ProviderCapability; outcome: ProviderOutcome };

/**
 * svc_provider_request_duration_seconds{provider,capability,outcome}: how long each call to a model
 * provider (worker/providers/instrumented.ts) or to a webhook receiver took, streamed replies until
 * their last token; svc_provider_cost_minor_total{provider,capability}: what the answered calls cost
 * at the route entry's prices, the spend an operator watches per provider; and the GenAI client
 * metrics of the model calls among them (`genAi`).
 */
export class ProviderMetrics {
  private readonly duration: Histogram<keyof ProviderCall>;
  private readonly cost: Counter<'provider' | 'capability'>;
  readonly genAi: GenAiMetrics;

  constructor(registry: Registry) {
    this.duration = new Histogram({
      name: 'svc_provider_request_duration_seconds',
      help: 'Duration of calls to model providers and webhook receivers, by provider, capability and outcome.',
      labelNames: ['provider', 'capability', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
      enableExemplars: hasExemplars(registry),
    });
    this.genAi = new GenAiMetrics(registry);
    this.cost = new Counter({
      name: 'svc_provider_cost_minor_total',
      help: 'Cost of answered model provider calls at the price table, in minor units of the workspace currency (before rounding), by provider and capability.',
      labelNames: ['provider', 'capability'],
      registers: [registry],
    });
  }

  /** An answered call's cost (fractional minor units, as the price table gives it). */
  spent(call: Pick<ProviderCall, 'provider' | 'capability'>, costMinor: number): void {
    this.cost.inc({ provider: call.provider, capability: call.capability }, costMinor);
  }

  observe(call: ProviderCall, seconds: number): void {
    observeTraced(this.duration, call, seconds);
  }
}
