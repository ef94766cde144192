import type { Config } from '../../shared/config/config.ts';
import type { RoutedCapability, RouteEntry } from '../../shared/config/providersConfig.ts';
import type { Db } from '../../shared/db/sql.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { CircuitBreaker } from '../../shared/providers/circuitBreaker.ts';
import { ProviderError, type Providers } from '../../shared/providers/types.ts';
import type { ProviderMetrics } from '../metrics/providerMetrics.ts';
import { entryClients } from './entryClients.ts';
import { localVideo } from './ffmpegVideo.ts';
import { type EntryClients, makeGateway } from './gateway.ts';
import { instrumentEntryClients, instrumentLocalWork } from './instrumented.ts';
import { videoUnsupported } from './openai.ts';
import { makeTesseractOcr } from './tesseract.ts';

/**
 * The providers live keys use: text, images, embeddings and transcription through the gateway's
 * routes (PROVIDERS, or the one provider PROVIDER names), with circuit breakers shared by the fleet
 * in PostgreSQL. OCR is always the local tesseract (OCR_ENGINES engines, reads bounded by
 * OCR_TIMEOUT_MS): the OpenAI protocol has no OCR endpoint, and DESIGN.md makes local OCR real.
 */
export function makeLiveProviders(
  config: Config,
  parts: { pool: Db; logger: Logger; metrics?: ProviderMetrics },
): Providers & { close(): Promise<void> } {
  const observers = { logger: parts.logger, metrics: parts.metrics };
  const ocr = makeTesseractOcr({ engines: config.ocrEngines, timeoutMs: config.ocrTimeoutMs });
  const { providers } = config.providers;
  const breaker = new CircuitBreaker(parts.pool, (name) => {
    const spec = providers[name]!;
    return { ...spec.breaker, trialMs: spec.timeoutMs };
  });
  const built = new Map<string, Partial<EntryClients>>();
  const clientFor = <C extends RoutedCapability>(capability: C, entry: RouteEntry): EntryClients[C] => {
    const key = `${entry.provider}/${entry.model}`;
    let clients = built.get(key);
    if (!clients) {
      clients = instrumentEntryClients(
        entryClients(providers[entry.provider]!, entry.model),
        entry,
        observers,
      );
      built.set(key, clients);
    }
    const client = clients[capability];
    if (!client) throw new ProviderError(`provider ${entry.provider} does not serve ${capability}`, false);
    return client;
  };
  const gateway = makeGateway({
    config: config.providers,
    breaker,
    clientFor,
    onBreakerError: (error) => parts.logger.warn({ err: error }, 'recording a provider failure failed'),
    onFallback: ({ capability, from, error }) =>
      parts.logger.warn(
        { capability, provider: from.provider, model: from.model, err: error },
        'provider call failed: trying the next entry of its route',
      ),
  });
  const video = config.providers.localVideo ? localVideo : videoUnsupported;
  return {
    ...gateway,
    ...instrumentLocalWork({ ocr, video }, config.prices, observers),
    close: () => ocr.close(),
  };
}
