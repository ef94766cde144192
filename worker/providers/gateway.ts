import { modelRoute } from '../../shared/config/modelRoutes.ts';
import type { ProvidersConfig, RoutedCapability, RouteEntry } from '../../shared/config/providersConfig.ts';
import type { CircuitBreaker } from '../../shared/providers/circuitBreaker.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import {
  type Answerer,
  type ChatProvider,
  type ChatRequest,
  type EmbeddingProvider,
  type ImageProvider,
  ProviderError,
  type TextGeneration,
  type TranscriptionProvider,
} from '../../shared/providers/types.ts';
import type { Balancer } from './balance.ts';
import type { EntryClients } from './clientTypes.ts';
import type { ProviderBudgets } from './providerBudgets.ts';

export type GatewayParts = {
  config: ProvidersConfig;
  breaker: CircuitBreaker;
  /** The order a call tries a route's entries in: a balanced group's members as its strategy picks. */
  balancer: Balancer;
  /** The client of a capability for a route entry (built once per entry by the caller). */
  clientFor<C extends RoutedCapability>(capability: C, entry: RouteEntry): Promise<EntryClients[C]>;
  /** A circuit-breaker write that failed, for the worker's log. */
  onBreakerError(error: unknown): void;
  /** Each attempt that failed over, for the worker's log. */
  onFallback(attempt: { capability: RoutedCapability; from: Answerer; error: ProviderError }): void;
  /** The upstream accounts' rpm/tpm budgets (PROVIDERS); absent: none are kept. */
  budgets?: ProviderBudgets;
  /** An entry passed by because its provider's budget for this minute is spent, for the worker's log. */
  onBudgetSpent?(skipped: { capability: RoutedCapability; provider: string }): void;
  /** A budget write that failed, for the worker's log. */
  onBudgetError?(error: unknown): void;
};

/** A call's token estimate for the providers' budgets, and its real count once answered. */
export type TokenEstimate<T> = { tokens: number; used(value: T): number };

/**
 * Calls a capability's route in order inside one job attempt. A retryable failure is the provider's
 * doing (a connection error, no first byte within its first-byte deadline or a silence as long
 * mid-answer, 408/409/425/429/5xx, a dropped connection or error event before the answer completed):
 * it counts against the provider's circuit and moves on to the next entry at once. An answer its
 * whole-answer deadline ended while it still flowed is not a failure: the client returns it as it
 * stands (`length`), so it is neither counted nor tried again (see callBounds.ts). Providers whose
 * circuit is open or that asked for rest are skipped. Anything else (a request the provider refuses,
 * a cancellation) ends the call where it is, as does a failure after a delta reached the caller
 * (`streamed`): the text would otherwise be stitched from two models. When every entry failed or
 * was skipped the last failure is thrown, so the job's own retries take over.
 */
export async function callRoute<T extends object>(
  parts: GatewayParts,
  capability: RoutedCapability,
  call: (entry: RouteEntry) => Promise<T>,
  streamed: { delivered: boolean } = { delivered: false },
  estimate?: TokenEstimate<T>,
  /** The route a compatible API's `model` chose (shared/config/modelRoutes.ts); the capability's own when absent. */
  model?: string,
): Promise<T & { answeredBy: Answerer }> {
  const chosen = modelRoute(parts.config, capability, model);
  // The api checked the name against the same configuration: a fleet mid-deploy may disagree.
  if (!chosen) throw new ProviderError(`no ${capability} route or entry is named ${model}`, false);
  const route = chosen.entries;
  let last: ProviderError | undefined;
  let overBudget = false;
  for (const entry of parts.balancer.walk(chosen.steps)) {
    if ((await parts.breaker.admit(entry.provider)) === 'skip') continue;
    // Spent this minute fleet-wide: the provider would answer 429, so the next member or entry
    // takes the call without asking it (and without counting against its circuit).
    const taken = await parts.budgets?.take(entry.provider, estimate?.tokens ?? 0);
    if (taken === 'spent') {
      overBudget = true;
      parts.onBudgetSpent?.({ capability, provider: entry.provider });
      continue;
    }
    const answeredBy = { provider: entry.provider, model: entry.model };
    try {
      const value = await call(entry);
      if (taken && estimate) {
        void parts
          .budgets!.settle(taken, estimate.used(value))
          .catch((e: unknown) => parts.onBudgetError?.(e));
      }
      await parts.breaker.succeeded(entry.provider);
      if (!parts.config.named || !('model' in value)) return { ...value, answeredBy };
      // The model the provider says served the call, under the provider's name in PROVIDERS.
      return { ...value, model: `${entry.provider}/${String(value.model)}`, answeredBy };
    } catch (error) {
      if (!(error instanceof ProviderError) || !error.retryable) throw error;
      // Counted in the background: the next entry need not wait for the write (this process's
      // breaker caches the new state when it lands; a failed write costs one count, not the call).
      void parts.breaker.failed(entry.provider, error.retryAfterMs).catch(parts.onBreakerError);
      if (streamed.delivered) throw error;
      parts.onFallback({ capability, from: answeredBy, error });
      last = error;
    }
  }
  throw (
    last ??
    new ProviderError(
      route.length === 0
        ? `no provider is routed for ${capability} (PROVIDERS.routes.${capability})`
        : overBudget
          ? `every provider routed for ${capability} is resting, has spent its budget for this minute or has its circuit open`
          : `every provider routed for ${capability} is resting or its circuit is open`,
      route.length > 0,
    )
  );
}

type Streamed = { delivered: boolean; text: string; entry: RouteEntry | undefined };

/**
 * A streamed reply whose provider failed after the caller had text from it: it is not continued
 * elsewhere, and it ends as a cut-off reply of what was delivered, billed for that (tokens
 * estimated, the provider's count having never arrived) rather than retried, which would stream the
 * answer again after the part already sent.
 */
function cutShort(
  config: ProvidersConfig,
  request: ChatRequest,
  entry: RouteEntry,
  text: string,
): TextGeneration & { answeredBy: Answerer } {
  const answeredBy = { provider: entry.provider, model: entry.model };
  return {
    text,
    model: config.named ? `${entry.provider}/${entry.model}` : entry.model,
    usage: {
      inputTokens: request.messages.reduce((n, m) => n + estimateTokens(m.content), 0),
      outputTokens: estimateTokens(text),
    },
    finishReason: 'cancelled',
    answeredBy,
  };
}

/** The routed capabilities as the worker's Providers see them: each call goes through its route. */
export function makeGateway(parts: GatewayParts) {
  const chat: ChatProvider = {
    async chat(request) {
      const streamed: Streamed = { delivered: false, text: '', entry: undefined };
      const onDelta = request.onDelta;
      try {
        return await callRoute(
          parts,
          'text',
          async (entry) => {
            streamed.entry = entry;
            return (await parts.clientFor('text', entry)).chat({
              ...request,
              onDelta:
                onDelta &&
                ((text) => {
                  streamed.delivered = true;
                  streamed.text += text;
                  onDelta(text);
                }),
            });
          },
          streamed,
          {
            tokens: request.messages.reduce((n, m) => n + estimateTokens(m.content), 0) + request.maxTokens,
            used: (g) => g.usage.inputTokens + g.usage.outputTokens,
          },
          request.route,
        );
      } catch (error) {
        if (!(error instanceof ProviderError) || !streamed.delivered || !streamed.entry) throw error;
        return cutShort(parts.config, request, streamed.entry, streamed.text);
      }
    },
  };
  const images: ImageProvider = {
    generate: (request) =>
      callRoute(
        parts,
        'image',
        async (entry) => (await parts.clientFor('image', entry)).generate(request),
        undefined,
        undefined,
        request.route,
      ),
  };
  const embeddings: EmbeddingProvider = {
    embed: (request) =>
      callRoute(
        parts,
        'embedding',
        async (entry) => (await parts.clientFor('embedding', entry)).embed(request),
        undefined,
        {
          tokens: request.input.reduce((n, text) => n + estimateTokens(text), 0),
          used: (r) => r.usage.inputTokens,
        },
        request.route,
      ),
  };
  const transcription: TranscriptionProvider = {
    transcribe: (request) =>
      callRoute(
        parts,
        'transcription',
        async (entry) => (await parts.clientFor('transcription', entry)).transcribe(request),
        undefined,
        undefined,
        request.route,
      ),
  };
  return { chat, images, embeddings, transcription };
}
