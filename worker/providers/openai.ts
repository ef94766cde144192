import { z } from 'zod';

import { toStorableText } from '../../shared/primitives/storableText.ts';
import { audioDurationSeconds } from '../../shared/providers/audio.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import {
  type ChatProvider,
  type EmbeddingProvider,
  type ImageProvider,
  ProviderError,
  type TextGeneration,
  type TranscriptionProvider,
  type VideoProvider,
} from '../../shared/providers/types.ts';
import type { EntryClients } from './gateway.ts';
import {
  failure,
  openaiRequest,
  type OpenAiSettings,
  ProviderAborted,
  readEventStream,
  readJson,
  streamedError,
} from './openaiHttp.ts';

/** A response that does not have the shape the protocol promises: maybe a proxy glitch, so retryable. */
function parse<T>(schema: z.ZodType<T>, value: unknown, path: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ProviderError(`openai ${path} answered an unexpected shape`, true);
  return parsed.data;
}

// Whatever a provider answers is stored and relayed through PostgreSQL, which refuses some text.
const storableString = z.string().transform(toStorableText);

const chatChunk = z.object({
  model: storableString.optional(),
  choices: z
    .array(
      z.object({
        delta: z.object({ content: storableString.nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .optional(),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});

type BudgetField = 'max_completion_tokens' | 'max_tokens';

/** A 400 that names the budget field: a server that does not know max_completion_tokens. */
function rejectsBudgetField(error: unknown, field: BudgetField): boolean {
  return error instanceof ProviderError && error.status === 400 && error.message.includes(field);
}

/**
 * Chat completions, always streamed from the provider: deltas reach `onDelta` as they arrive, and a
 * cancellation mid-reply still knows what was produced, so it can be billed for exactly that.
 * The output budget goes as max_completion_tokens (OpenAI's name; its reasoning models refuse
 * max_tokens); a compatible server that refuses that name gets max_tokens from then on.
 */
function makeChat(settings: OpenAiSettings, model: string): ChatProvider {
  const path = '/chat/completions';
  let budgetField: BudgetField = 'max_completion_tokens';
  const request = (messages: unknown, maxTokens: number, signal: AbortSignal) => {
    const body = {
      model,
      messages,
      [budgetField]: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
    };
    return openaiRequest(settings, path, body, signal);
  };
  const start = async (messages: unknown, maxTokens: number, signal: AbortSignal) => {
    try {
      return await request(messages, maxTokens, signal);
    } catch (error) {
      if (budgetField !== 'max_completion_tokens' || !rejectsBudgetField(error, budgetField)) throw error;
      budgetField = 'max_tokens';
      return request(messages, maxTokens, signal);
    }
  };
  return {
    async chat({ messages, maxTokens, signal, onDelta }): Promise<TextGeneration> {
      const estimatedInput = messages.reduce((n, m) => n + estimateTokens(m.content), 0);
      let text = '';
      let served = model;
      let finish: string | undefined;
      let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
      const partial = (): TextGeneration => ({
        text,
        model: served,
        usage: { inputTokens: usage?.prompt_tokens ?? estimatedInput, outputTokens: estimateTokens(text) },
        finishReason: 'cancelled',
      });
      let call: Awaited<ReturnType<typeof openaiRequest>>;
      try {
        // The wire format is role and content only (requesterText is for the offline stand-ins).
        const wire = messages.map(({ role, content }) => ({ role, content }));
        call = await start(wire, maxTokens, signal);
      } catch (error) {
        if (error instanceof ProviderAborted) return partial();
        throw error;
      }
      try {
        await readEventStream(call.res, (data) => {
          if (data === '[DONE]') return;
          let json: unknown;
          try {
            json = JSON.parse(data);
          } catch {
            throw new ProviderError(`openai ${path} streamed malformed JSON`, true);
          }
          const streamed = streamedError(json, path, settings.apiKey);
          if (streamed) throw streamed;
          const chunk = parse(chatChunk, json, path);
          if (chunk.model) served = chunk.model;
          if (chunk.usage) usage = chunk.usage;
          for (const choice of chunk.choices ?? []) {
            if (choice.finish_reason) finish = choice.finish_reason;
            const piece = choice.delta?.content;
            if (piece) {
              text += piece;
              onDelta?.(piece);
            }
          }
        });
      } catch (error) {
        const classified = failure(error, signal, call.timeout, path, settings);
        if (classified instanceof ProviderAborted) return partial();
        throw classified;
      }
      if (signal.aborted) return partial();
      return {
        text,
        model: served,
        usage: {
          inputTokens: usage?.prompt_tokens ?? estimatedInput,
          outputTokens: usage?.completion_tokens ?? estimateTokens(text),
        },
        finishReason: finish === 'length' ? 'length' : 'stop',
      };
    },
  };
}

const embeddingResponse = z.object({
  model: storableString.optional(),
  data: z.array(z.object({ index: z.number(), embedding: z.array(z.number()) })),
  usage: z.object({ prompt_tokens: z.number() }).optional(),
});

function makeEmbeddings(settings: OpenAiSettings, model: string): EmbeddingProvider {
  const path = '/embeddings';
  return {
    async embed({ input, signal }) {
      const call = await openaiRequest(settings, path, { model, input, encoding_format: 'float' }, signal);
      const body = parse(embeddingResponse, await readJson(call, path, settings, signal), path);
      if (body.data.length !== input.length) {
        throw new ProviderError(
          `openai ${path} returned ${body.data.length} of ${input.length} vectors`,
          true,
        );
      }
      const vectors = [...body.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
      return {
        vectors,
        model: body.model ?? model,
        usage: { inputTokens: body.usage?.prompt_tokens ?? input.reduce((n, t) => n + estimateTokens(t), 0) },
      };
    },
  };
}

/** The provider's sizes nearest to each aspect ratio the API accepts. */
export function imageSize(model: string, aspectRatio: string): string {
  const [w = 1, h = 1] = aspectRatio.split(':').map(Number);
  const shape = w === h ? 'square' : w > h ? 'landscape' : 'portrait';
  if (model.startsWith('dall-e-2')) return '1024x1024';
  if (model.startsWith('dall-e-3')) {
    return { square: '1024x1024', landscape: '1792x1024', portrait: '1024x1792' }[shape];
  }
  return { square: '1024x1024', landscape: '1536x1024', portrait: '1024x1536' }[shape];
}

const imageResponse = z.object({
  data: z.array(z.object({ b64_json: z.string().nullish(), url: z.string().nullish() })).min(1),
  output_format: z.string().optional(),
  usage: z.object({ input_tokens: z.number(), output_tokens: z.number() }).optional(),
});

function makeImages(settings: OpenAiSettings, model: string): ImageProvider {
  const path = '/images/generations';
  return {
    async generate({ prompt, aspectRatio, signal }) {
      // dall-e models answer with a URL unless asked for base64; gpt-image models only speak base64.
      const request: Record<string, unknown> = { model, prompt, n: 1, size: imageSize(model, aspectRatio) };
      if (model.startsWith('dall-e')) request.response_format = 'b64_json';
      const call = await openaiRequest(settings, path, request, signal);
      const body = parse(imageResponse, await readJson(call, path, settings, signal), path);
      const first = body.data[0]!;
      let b64 = first.b64_json ?? undefined;
      let mimeType = `image/${body.output_format ?? 'png'}`;
      if (!b64 && first.url) {
        const download = await fetchImage(first.url, settings, signal);
        b64 = download.bytes.toString('base64');
        mimeType = download.mimeType;
      }
      if (!b64) throw new ProviderError(`openai ${path} returned no image`, true);
      return {
        b64,
        mimeType: mimeType === 'image/jpg' ? 'image/jpeg' : mimeType,
        model,
        usage: {
          inputTokens: body.usage?.input_tokens ?? estimateTokens(prompt),
          outputTokens: body.usage?.output_tokens ?? 0,
        },
      };
    },
  };
}

async function fetchImage(
  url: string,
  settings: OpenAiSettings,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; mimeType: string }> {
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  try {
    const res = await fetch(url, { signal: AbortSignal.any([signal, timeout]) });
    if (!res.ok) throw new ProviderError(`image download answered ${res.status}`, res.status >= 500);
    return {
      bytes: Buffer.from(await res.arrayBuffer()),
      mimeType: res.headers.get('content-type') ?? 'image/png',
    };
  } catch (error) {
    throw failure(error, signal, timeout, 'image download', settings);
  }
}

const transcriptionResponse = z.object({ text: storableString, duration: z.number().optional() });

function makeTranscription(settings: OpenAiSettings, model: string): TranscriptionProvider {
  const path = '/audio/transcriptions';
  return {
    async transcribe({ audio, mimeType, filename, prompt, language, signal }) {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(audio)], { type: mimeType }), filename);
      form.append('model', model);
      // whisper reports the clip's duration in verbose_json; newer models only speak json.
      form.append('response_format', model.startsWith('whisper') ? 'verbose_json' : 'json');
      if (prompt) form.append('prompt', prompt);
      if (language) form.append('language', language);
      const call = await openaiRequest(settings, path, form, signal);
      const body = parse(transcriptionResponse, await readJson(call, path, settings, signal), path);
      return { text: body.text, model, durationSeconds: body.duration ?? audioDurationSeconds(audio) };
    },
  };
}

/** The clients of one route entry on an OpenAI-compatible HTTP API: its base URL and key, one model. */
export function openAiEntryClients(settings: OpenAiSettings, model: string): EntryClients {
  return {
    text: makeChat(settings, model),
    image: makeImages(settings, model),
    embedding: makeEmbeddings(settings, model),
    transcription: makeTranscription(settings, model),
  };
}

/**
 * The OpenAI-compatible protocol has no video generation endpoint that such servers share, so a live
 * key under PROVIDER=openai cannot render: the refusal is not retryable (trying again sends the same
 * request), which fails the job at once and marks the video failed. PROVIDER=local renders with ffmpeg.
 */
export const videoUnsupported: VideoProvider = {
  render() {
    return Promise.reject(new ProviderError('the openai provider does not support video generation', false));
  },
};
