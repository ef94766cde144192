import type { Config } from '../../shared/config/config.ts';
import { reachableEntries } from '../../shared/config/modelRoutes.ts';
import {
  routedCapabilities,
  type RoutedCapability,
  type RouteEntry,
} from '../../shared/config/providersConfig.ts';
import type { Db } from '../../shared/db/sql.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { CircuitBreaker } from '../../shared/providers/circuitBreaker.ts';
import { ProviderError, type Providers, type VideoProvider } from '../../shared/providers/types.ts';
import type { ProviderMetrics } from '../metrics/providerMetrics.ts';
import { Balancer } from './balance.ts';
import type { EntryClients } from './clientTypes.ts';
import { entryClients } from './entryClients.ts';
import { localVideo } from './ffmpegVideo.ts';
import { makeGateway } from './gateway.ts';
import { instrumentEntryClients, instrumentLocalWork } from './instrumented.ts';
import { ProviderBudgets } from './providerBudgets.ts';
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
  const balancer = new Balancer({ failurePenaltyMs: (entry) => providers[entry.provider]!.timeoutMs });
  // Every route entry's clients (one per provider and model), loading from the start so the first
  // call finds them ready: a protocol's module and its SDK load only when a route names its type.
  const built = new Map<string, Promise<Partial<EntryClients>>>();
  for (const entry of routedCapabilities.flatMap((c) => reachableEntries(config.providers, c))) {
    const key = `${entry.provider}/${entry.model}`;
    if (built.has(key)) continue;
    const loading = entryClients(providers[entry.provider]!, entry.model).then((clients) =>
      balancer.observe(
        instrumentEntryClients(clients, entry, observers, providers[entry.provider]!.baseUrl),
        entry,
      ),
    );
    // Logged now, for the operator; thrown again to each call that needs this entry.
    loading.catch((error: unknown) =>
      parts.logger.error({ err: error, provider: entry.provider }, 'loading a provider client failed'),
    );
    built.set(key, loading);
  }
  const clientFor = async <C extends RoutedCapability>(
    capability: C,
    entry: RouteEntry,
  ): Promise<EntryClients[C]> => {
    const client = (await built.get(`${entry.provider}/${entry.model}`))?.[capability];
    if (!client) throw new ProviderError(`provider ${entry.provider} does not serve ${capability}`, false);
    return client;
  };
  const gateway = makeGateway({
    config: config.providers,
    breaker,
    balancer,
    clientFor,
    onBreakerError: (error) => parts.logger.warn({ err: error }, 'recording a provider failure failed'),
    budgets: new ProviderBudgets(parts.pool, (name) => providers[name]!.budget),
    onBudgetSpent: ({ capability, provider }) =>
      parts.logger.info(
        { capability, provider },
        "provider's budget for this minute spent: trying the next entry",
      ),
    onBudgetError: (error) => parts.logger.warn({ err: error }, 'settling a provider budget failed'),
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

/**
 * The OpenAI-compatible protocol has no video generation endpoint that such servers share, so a live
 * key under PROVIDER=openai cannot render: the refusal is not retryable (trying again sends the same
 * request), which fails the job at once and marks the video failed. PROVIDER=local renders with ffmpeg.
 */
const videoUnsupported: VideoProvider = {
  render() {
    return Promise.reject(new ProviderError('the openai provider does not support video generation', false));
  },
};
