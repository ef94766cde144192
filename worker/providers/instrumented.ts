import { type Attributes, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

import {
  embeddingCost,
  imageCost,
  ocrCost,
  type Prices,
  textCost,
  transcriptionCost,
  videoCost,
} from '../../shared/config/prices.ts';
import type { RouteEntry } from '../../shared/config/providersConfig.ts';
import { coerceError } from '../../shared/errors/appError.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { scrubSecrets } from '../../shared/observability/scrubSecrets.ts';
import type { ChatRequest, Providers, TextUsage } from '../../shared/providers/types.ts';
import type { ProviderCapability, ProviderMetrics, ProviderOutcome } from '../metrics/providerMetrics.ts';
import type { EntryClients } from './clientTypes.ts';

const tracer = trace.getTracer('svc-worker');

/** What the instrumentation needs besides the providers; `metrics` absent: spans and logs only. */
export type ProviderObservers = { logger: Logger; metrics?: ProviderMetrics };

/** What an answer tells of its call: the model that answered, tokens, cost, why it stopped. */
type Described = {
  model: string;
  usage?: Partial<TextUsage>;
  costMinor: number;
  finishReasons?: string[];
};

/** How a capability's calls are described: the gen_ai operation, and what an answer adds to its span. */
type CallShape<Request, Answer> = {
  capability: ProviderCapability;
  /** `gen_ai.operation.name` where the GenAI conventions name one; otherwise the capability. */
  operation: string;
  provider: string;
  /** The route entry's model: a model call (GenAI metrics); undefined for OCR and video. */
  requestModel: string | undefined;
  /** The provider's host and port (`server.address`, `server.port`): never its base URL's path. */
  server?: Attributes;
  describe(answer: Answer): Described;
  outcome?(answer: Answer): ProviderOutcome;
  /**
   * The request as sent, with `firstChunk` called at its first streamed chunk, and what it adds to
   * the span (a streamed text call: `gen_ai.request.stream`, its token limit).
   */
  prepare?(request: Request, firstChunk: () => void): { request: Request; attributes: Attributes };
};

/** The GenAI conventions' usage attributes: input and output tokens, the prompt's cache reads and writes. */
function usageAttributes(usage: Partial<TextUsage> | undefined): Attributes {
  const out: Attributes = {};
  if (usage?.inputTokens !== undefined) out['gen_ai.usage.input_tokens'] = usage.inputTokens;
  if (usage?.outputTokens !== undefined) out['gen_ai.usage.output_tokens'] = usage.outputTokens;
  if (usage?.cachedInputTokens !== undefined) {
    out['gen_ai.usage.cache_read.input_tokens'] = usage.cachedInputTokens;
  }
  if (usage?.cacheWriteInputTokens !== undefined) {
    out['gen_ai.usage.cache_creation.input_tokens'] = usage.cacheWriteInputTokens;
  }
  return out;
}

/**
 * One provider call observed: a client span named as the GenAI conventions name them (`chat
 * gpt-4o-mini`) with the gen_ai.* attributes (models, finish reasons, tokens with cached ones, time
 * to first chunk) and the call's cost, the duration histogram and, for model calls, the GenAI client
 * metrics, and a debug log line inside the span. The span ends when the call settles (a streamed
 * reply: after its last token).
 */
function observed<Request extends { signal: AbortSignal }, Answer>(
  call: (request: Request) => Promise<Answer>,
  shape: CallShape<Request, Answer>,
  observers: ProviderObservers,
): (request: Request) => Promise<Answer> {
  const attributes: Attributes = {
    'gen_ai.operation.name': shape.operation,
    'gen_ai.provider.name': shape.provider,
    'svc.capability': shape.capability,
  };
  if (shape.requestModel !== undefined) attributes['gen_ai.request.model'] = shape.requestModel;
  Object.assign(attributes, shape.server);
  const name =
    shape.requestModel === undefined ? shape.operation : `${shape.operation} ${shape.requestModel}`;
  const genAi =
    shape.requestModel === undefined
      ? undefined
      : { operation: shape.operation, provider: shape.provider, requestModel: shape.requestModel };
  return (given) =>
    tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const started = performance.now();
      let outcome: ProviderOutcome = 'error';
      let usage: Partial<TextUsage> | undefined;
      let firstChunkSeen = false;
      const firstChunk = () => {
        if (firstChunkSeen) return;
        firstChunkSeen = true;
        const seconds = (performance.now() - started) / 1000;
        span.setAttribute('gen_ai.response.time_to_first_chunk', seconds);
        if (genAi) observers.metrics?.genAi.observeFirstChunk(genAi, seconds);
      };
      const prepared = shape.prepare?.(given, firstChunk);
      if (prepared) span.setAttributes(prepared.attributes);
      const request = prepared?.request ?? given;
      try {
        const answer = await call(request);
        const described = shape.describe(answer);
        usage = described.usage;
        span.setAttributes({
          'gen_ai.response.model': described.model,
          'svc.cost_minor': described.costMinor,
          ...usageAttributes(usage),
          ...(described.finishReasons && { 'gen_ai.response.finish_reasons': described.finishReasons }),
        });
        outcome = shape.outcome?.(answer) ?? 'ok';
        observers.metrics?.spent(
          { provider: shape.provider, capability: shape.capability },
          described.costMinor,
        );
        return answer;
      } catch (thrown) {
        outcome = request.signal.aborted ? 'cancelled' : 'error';
        const error = coerceError(thrown);
        span.setStatus({ code: SpanStatusCode.ERROR, message: scrubSecrets(error.message) });
        span.setAttribute('error.type', error.name);
        throw thrown;
      } finally {
        const seconds = (performance.now() - started) / 1000;
        span.setAttribute('svc.outcome', outcome);
        observers.metrics?.observe(
          { provider: shape.provider, capability: shape.capability, outcome },
          seconds,
        );
        if (genAi) {
          const tokens = { input: usage?.inputTokens, output: usage?.outputTokens };
          observers.metrics?.genAi.observeCall(genAi, seconds, tokens);
        }
        observers.logger.debug(
          {
            provider: shape.provider,
            capability: shape.capability,
            outcome,
            durationMs: Math.round(seconds * 1000),
          },
          'provider call',
        );
        span.end();
      }
    });
}

/** A text call's token limit, and for a streamed one the first chunk's time (its first delta). */
function streamedText(request: ChatRequest, firstChunk: () => void) {
  const attributes: Attributes = {
    'gen_ai.request.max_tokens': request.maxTokens,
    'gen_ai.request.stream': request.onDelta !== undefined,
  };
  const { onDelta } = request;
  if (onDelta === undefined) return { request, attributes };
  const withFirstChunk = (text: string) => {
    firstChunk();
    onDelta(text);
  };
  return { request: { ...request, onDelta: withFirstChunk }, attributes };
}

/** A base URL's host and port as the conventions' server attributes (none for `local`). */
function serverAttributes(baseUrl: string | undefined): Attributes | undefined {
  if (baseUrl === undefined) return undefined;
  try {
    const url = new URL(baseUrl);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return { 'server.address': url.hostname, 'server.port': port };
  } catch {
    return undefined;
  }
}

/**
 * One route entry's clients, each call observed (see `observed`) under the entry's provider and
 * model, costed at the entry's prices: a call that falls over to the next entry shows as two spans,
 * the failed one and the one that answered.
 */
export function instrumentEntryClients(
  clients: Partial<EntryClients>,
  entry: RouteEntry,
  observers: ProviderObservers,
  baseUrl?: string,
): Partial<EntryClients> {
  const { provider, model: requestModel, prices } = entry;
  const server = serverAttributes(baseUrl);
  const observe = <Request extends { signal: AbortSignal }, Answer>(
    call: (request: Request) => Promise<Answer>,
    how: Omit<CallShape<Request, Answer>, 'provider' | 'requestModel'>,
  ) => observed(call, { provider, requestModel, server, ...how }, observers);
  const { text, image, embedding, transcription } = clients;
  return {
    ...(text && {
      text: {
        chat: observe(text.chat.bind(text), {
          capability: 'text',
          operation: 'chat',
          describe: (a) => ({
            model: a.model,
            usage: a.usage,
            costMinor: textCost(prices, a.usage),
            finishReasons: [a.finishReason],
          }),
          outcome: (a) => (a.finishReason === 'cancelled' ? 'cancelled' : 'ok'),
          prepare: streamedText,
        }),
      },
    }),
    ...(image && {
      image: {
        generate: observe(image.generate.bind(image), {
          capability: 'image',
          operation: 'generate_content',
          describe: (a) => ({ model: a.model, usage: a.usage, costMinor: imageCost(prices, 1) }),
        }),
      },
    }),
    ...(embedding && {
      embedding: {
        embed: observe(embedding.embed.bind(embedding), {
          capability: 'embedding',
          operation: 'embeddings',
          describe: (a) => ({
            model: a.model,
            usage: a.usage,
            costMinor: embeddingCost(prices, a.usage.inputTokens),
          }),
        }),
      },
    }),
    ...(transcription && {
      transcription: {
        transcribe: observe(transcription.transcribe.bind(transcription), {
          capability: 'transcription',
          operation: 'generate_content',
          describe: (a) => ({ model: a.model, costMinor: transcriptionCost(prices, a.durationSeconds) }),
        }),
      },
    }),
  };
}

/**
 * The work no route decides, observed the same way: OCR is always the local tesseract (labelled
 * `tesseract`), video the local ffmpeg renderer (`local`) or the refusal of a provider without one.
 */
export function instrumentLocalWork(
  work: Pick<Providers, 'ocr' | 'video'>,
  prices: Prices,
  observers: ProviderObservers,
): Pick<Providers, 'ocr' | 'video'> {
  // No GenAI operation names these capabilities, so each is its own operation; no model is asked for.
  const observe = <Request extends { signal: AbortSignal }, Answer>(
    call: (request: Request) => Promise<Answer>,
    how: Pick<CallShape<Request, Answer>, 'capability' | 'provider' | 'describe'>,
  ) => observed(call, { ...how, operation: how.capability, requestModel: undefined }, observers);
  return {
    ocr: {
      extract: observe(work.ocr.extract.bind(work.ocr), {
        capability: 'ocr',
        provider: 'tesseract',
        describe: (a) => ({ model: a.model, costMinor: ocrCost(prices, a.pages) }),
      }),
    },
    video: {
      render: observe(work.video.render.bind(work.video), {
        capability: 'video',
        provider: 'local',
        describe: (a) => ({ model: a.model, costMinor: videoCost(prices, a.durationSeconds) }),
      }),
    },
  };
}
