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
import { type Logger, scrubSecrets } from '../../shared/observability/logger.ts';
import type { Providers, TokenUsage } from '../../shared/providers/types.ts';
import type { ProviderCapability, ProviderMetrics, ProviderOutcome } from '../metrics/providerMetrics.ts';
import type { EntryClients } from './clientTypes.ts';

const tracer = trace.getTracer('svc-worker');

/** What the instrumentation needs besides the providers; `metrics` absent: spans and logs only. */
export type ProviderObservers = { logger: Logger; metrics?: ProviderMetrics };

/** How a capability's calls are described: the gen_ai operation, and what an answer adds to its span. */
type CallShape<Answer> = {
  capability: ProviderCapability;
  /** `gen_ai.operation.name` where the GenAI conventions name one; otherwise the capability. */
  operation: string;
  provider: string;
  requestModel: string | undefined;
  describe(answer: Answer): { model: string; usage?: Partial<TokenUsage>; costMinor: number };
  outcome?(answer: Answer): ProviderOutcome;
};

/**
 * One provider call observed: a client span named as the GenAI conventions name them (`chat
 * gpt-4o-mini`) with the gen_ai.* attributes and the call's cost, the duration histogram, and a
 * debug log line inside the span. The span ends when the call settles (a streamed reply: after its
 * last token).
 */
function observed<Request extends { signal: AbortSignal }, Answer>(
  call: (request: Request) => Promise<Answer>,
  shape: CallShape<Answer>,
  observers: ProviderObservers,
): (request: Request) => Promise<Answer> {
  const attributes: Attributes = {
    'gen_ai.operation.name': shape.operation,
    'gen_ai.provider.name': shape.provider,
    'gen_ai.system': shape.provider,
    'svc.capability': shape.capability,
  };
  if (shape.requestModel !== undefined) attributes['gen_ai.request.model'] = shape.requestModel;
  const name =
    shape.requestModel === undefined ? shape.operation : `${shape.operation} ${shape.requestModel}`;
  return (request) =>
    tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const started = performance.now();
      let outcome: ProviderOutcome = 'error';
      try {
        const answer = await call(request);
        const { model, usage, costMinor } = shape.describe(answer);
        span.setAttributes({
          'gen_ai.response.model': model,
          'svc.cost_minor': costMinor,
          ...(usage?.inputTokens !== undefined && { 'gen_ai.usage.input_tokens': usage.inputTokens }),
          ...(usage?.outputTokens !== undefined && { 'gen_ai.usage.output_tokens': usage.outputTokens }),
        });
        outcome = shape.outcome?.(answer) ?? 'ok';
        observers.metrics?.spent({ provider: shape.provider, capability: shape.capability }, costMinor);
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

/**
 * One route entry's clients, each call observed (see `observed`) under the entry's provider and
 * model, costed at the entry's prices: a call that falls over to the next entry shows as two spans,
 * the failed one and the one that answered.
 */
export function instrumentEntryClients(
  clients: Partial<EntryClients>,
  entry: RouteEntry,
  observers: ProviderObservers,
): Partial<EntryClients> {
  const { provider, model: requestModel, prices } = entry;
  const observe = <Request extends { signal: AbortSignal }, Answer>(
    call: (request: Request) => Promise<Answer>,
    how: Omit<CallShape<Answer>, 'provider' | 'requestModel'>,
  ) => observed(call, { provider, requestModel, ...how }, observers);
  const { text, image, embedding, transcription } = clients;
  return {
    ...(text && {
      text: {
        chat: observe(text.chat.bind(text), {
          capability: 'text',
          operation: 'chat',
          describe: (a) => ({ model: a.model, usage: a.usage, costMinor: textCost(prices, a.usage) }),
          outcome: (a) => (a.finishReason === 'cancelled' ? 'cancelled' : 'ok'),
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
    how: Pick<CallShape<Answer>, 'capability' | 'provider' | 'describe'>,
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
