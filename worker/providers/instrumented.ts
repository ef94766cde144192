import { type Attributes, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

import type { Config } from '../../shared/config/config.ts';
import {
  embeddingCost,
  imageCost,
  ocrCost,
  type Prices,
  textCost,
  transcriptionCost,
  videoCost,
} from '../../shared/config/prices.ts';
import { coerceError } from '../../shared/errors/appError.ts';
import { type Logger, scrubSecrets } from '../../shared/observability/logger.ts';
import type { Providers, TokenUsage } from '../../shared/providers/types.ts';
import type { ProviderCapability, ProviderMetrics, ProviderOutcome } from '../metrics/providerMetrics.ts';
import { localModels } from './local.ts';

const tracer = trace.getTracer('svc-worker');

/** What the instrumentation needs besides the providers; `metrics` absent: spans and logs only. */
export type ProviderObservers = { logger: Logger; prices: Prices; metrics?: ProviderMetrics };

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

/** The models a live call asks for, as configured (the local stand-ins name their own). */
function requestModels(config: Config) {
  if (config.provider.name === 'openai') {
    const o = config.provider.openai;
    return {
      text: o.textModel,
      image: o.imageModel,
      embedding: o.embeddingModel,
      transcription: o.transcriptionModel,
    };
  }
  return localModels;
}

/**
 * The live providers, each call observed (see `observed`). OCR is always the local tesseract, so its
 * calls are labelled `tesseract` whatever PROVIDER is. Test keys' fixtures are not provider calls and
 * are never wrapped.
 */
export function instrumentProviders(
  providers: Providers,
  config: Config,
  observers: ProviderObservers,
): Providers {
  const provider = config.provider.name;
  const models = requestModels(config);
  const { prices } = observers;
  return {
    chat: {
      chat: observed(
        providers.chat.chat.bind(providers.chat),
        {
          capability: 'text',
          operation: 'chat',
          provider,
          requestModel: models.text,
          describe: (a) => ({ model: a.model, usage: a.usage, costMinor: textCost(prices, a.usage) }),
          outcome: (a) => (a.finishReason === 'cancelled' ? 'cancelled' : 'ok'),
        },
        observers,
      ),
    },
    images: {
      generate: observed(
        providers.images.generate.bind(providers.images),
        {
          capability: 'image',
          operation: 'generate_content',
          provider,
          requestModel: models.image,
          describe: (a) => ({ model: a.model, usage: a.usage, costMinor: imageCost(prices, 1) }),
        },
        observers,
      ),
    },
    embeddings: {
      embed: observed(
        providers.embeddings.embed.bind(providers.embeddings),
        {
          capability: 'embedding',
          operation: 'embeddings',
          provider,
          requestModel: models.embedding,
          describe: (a) => ({
            model: a.model,
            usage: a.usage,
            costMinor: embeddingCost(prices, a.usage.inputTokens),
          }),
        },
        observers,
      ),
    },
    transcription: {
      transcribe: observed(
        providers.transcription.transcribe.bind(providers.transcription),
        {
          capability: 'transcription',
          operation: 'generate_content',
          provider,
          requestModel: models.transcription,
          describe: (a) => ({ model: a.model, costMinor: transcriptionCost(prices, a.durationSeconds) }),
        },
        observers,
      ),
    },
    ocr: {
      extract: observed(
        providers.ocr.extract.bind(providers.ocr),
        {
          capability: 'ocr',
          operation: 'ocr',
          provider: 'tesseract',
          requestModel: undefined,
          describe: (a) => ({ model: a.model, costMinor: ocrCost(prices, a.pages) }),
        },
        observers,
      ),
    },
    video: {
      render: observed(
        providers.video.render.bind(providers.video),
        {
          capability: 'video',
          operation: 'video',
          provider,
          requestModel: undefined,
          describe: (a) => ({ model: a.model, costMinor: videoCost(prices, a.durationSeconds) }),
        },
        observers,
      ),
    },
  };
}
