import { type Attributes, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

import type { ProviderMetrics, ProviderOutcome } from '../metrics/providerMetrics.ts';
import { type SendOutcome, type SendRequest, sendWebhook } from './send.ts';

const tracer = trace.getTracer('svc-worker');

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

/**
 * sendWebhook, observed like a provider call: a client span `webhook deliver` (the receiver's host,
 * never its path, which may hold a token), and svc_provider_request_duration_seconds with provider
 * and capability `webhook`. A 2xx is `ok`; an attempt cut short by a stopping worker is `cancelled`.
 */
export function observedSendWebhook(
  request: SendRequest,
  observers: { metrics?: ProviderMetrics; attributes: Attributes },
): Promise<SendOutcome> {
  const host = hostOf(request.url);
  const attributes: Attributes = { ...observers.attributes, 'svc.capability': 'webhook' };
  if (host !== undefined) attributes['server.address'] = host;
  return tracer.startActiveSpan('webhook deliver', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      const outcome = await sendWebhook(request);
      const result: ProviderOutcome = outcome.delivered
        ? 'ok'
        : request.signal?.aborted
          ? 'cancelled'
          : 'error';
      if (outcome.statusCode !== null) span.setAttribute('http.response.status_code', outcome.statusCode);
      if (!outcome.delivered) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error ?? 'failed' });
      }
      span.setAttribute('svc.outcome', result);
      observers.metrics?.observe(
        { provider: 'webhook', capability: 'webhook', outcome: result },
        outcome.durationMs / 1000,
      );
      return outcome;
    } finally {
      span.end();
    }
  });
}
