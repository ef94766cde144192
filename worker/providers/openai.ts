import OpenAI from 'openai';
import { z } from 'zod';

import { toStorableText } from '../../shared/primitives/storableText.ts';
import { audioDurationSeconds } from '../../shared/providers/audio.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import {
  type EmbeddingProvider,
  type ImageProvider,
  ProviderError,
  type TranscriptionProvider,
} from '../../shared/providers/types.ts';
import { callBounds } from './callBounds.ts';
import type { EntryClients, ProviderSettings } from './clientTypes.ts';
import { openAiChat } from './openaiChat.ts';
import { openAiFailure, parseAnswer } from './openaiFailure.ts';

// Whatever a provider answers is stored and relayed through PostgreSQL, which refuses some text.
const storableString = z.string().transform(toStorableText);

/**
 * The official SDK's client for one route entry. Its retries are off (the gateway decides where a
 * failed call goes), its logging too (failures reach the worker's log as ProviderErrors; the SDK
 * would print to the console), and it takes nothing from OPENAI_* variables meant for another
 * provider: the key is the entry's own, and a server without one (a local vLLM or Ollama) gets no
 * Authorization header at all rather than OPENAI_API_KEY.
 */
function sdkClient(settings: ProviderSettings): OpenAI {
  return new OpenAI({
    // The SDK refuses to start without a key: a keyless server's placeholder never leaves (see below).
    apiKey: settings.apiKey ?? 'unused',
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    baseURL: settings.baseUrl,
    timeout: settings.timeoutMs,
    maxRetries: 0,
    logLevel: 'off',
    ...(settings.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
  });
}

/** Runs one SDK request under the call's bounds; its failure as the gateway understands it. */
async function sdkCall<T>(
  settings: ProviderSettings,
  path: string,
  signal: AbortSignal,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  // Not streamed: nothing arrives before the whole answer, so only the whole-call deadline applies.
  const bounds = callBounds(signal, { timeoutMs: settings.timeoutMs });
  try {
    return await run(bounds.combined);
  } catch (error) {
    throw openAiFailure(error, { path, apiKey: settings.apiKey, timeoutMs: settings.timeoutMs, ...bounds });
  } finally {
    bounds.end();
  }
}

const embeddingResponse = z.object({
  model: storableString.optional(),
  data: z.array(z.object({ index: z.number(), embedding: z.array(z.number()) })),
  usage: z.object({ prompt_tokens: z.number() }).optional(),
});

function makeEmbeddings(client: OpenAI, settings: ProviderSettings, model: string): EmbeddingProvider {
  const path = '/embeddings';
  return {
    async embed({ input, signal, dimensions }) {
      const answer = await sdkCall(settings, path, signal, (combined) =>
        client.embeddings.create(
          { model, input, encoding_format: 'float', ...(dimensions ? { dimensions } : {}) },
          { signal: combined },
        ),
      );
      const body = parseAnswer(embeddingResponse, answer, path);
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

function makeImages(client: OpenAI, settings: ProviderSettings, model: string): ImageProvider {
  const path = '/images/generations';
  return {
    async generate({ prompt, aspectRatio, signal }) {
      const size = imageSize(model, aspectRatio);
      // dall-e models answer with a URL unless asked for base64; gpt-image models only speak base64.
      const format = model.startsWith('dall-e') ? { response_format: 'b64_json' as const } : {};
      const answer = await sdkCall(settings, path, signal, (combined) =>
        client.images.generate({ model, prompt, n: 1, size, ...format }, { signal: combined }),
      );
      const body = parseAnswer(imageResponse, answer, path);
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

/** An image a provider answered with as a URL: a plain download, outside the SDK (not its API). */
function fetchImage(
  url: string,
  settings: ProviderSettings,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; mimeType: string }> {
  return sdkCall(settings, 'image download', signal, async (combined) => {
    const res = await fetch(url, { signal: combined });
    if (!res.ok) throw new ProviderError(`image download answered ${res.status}`, res.status >= 500);
    return {
      bytes: Buffer.from(await res.arrayBuffer()),
      mimeType: res.headers.get('content-type') ?? 'image/png',
    };
  });
}

const transcriptionResponse = z.object({ text: storableString, duration: z.number().optional() });

function makeTranscription(client: OpenAI, settings: ProviderSettings, model: string): TranscriptionProvider {
  const path = '/audio/transcriptions';
  return {
    async transcribe({ audio, mimeType, filename, prompt, language, signal }) {
      const file = new File([new Uint8Array(audio)], filename, { type: mimeType });
      // whisper reports the clip's duration in verbose_json; newer models only speak json.
      const format = model.startsWith('whisper') ? 'verbose_json' : 'json';
      const answer = await sdkCall(settings, path, signal, (combined) =>
        client.audio.transcriptions.create(
          {
            file,
            model,
            response_format: format,
            ...(prompt ? { prompt } : {}),
            ...(language ? { language } : {}),
          },
          { signal: combined },
        ),
      );
      const body = parseAnswer(transcriptionResponse, answer, path);
      return { text: body.text, model, durationSeconds: body.duration ?? audioDurationSeconds(audio) };
    },
  };
}

/**
 * The clients of one route entry on an OpenAI-compatible HTTP API (its base URL and key, one
 * model): chat over its own streaming client, the rest sharing one SDK client.
 */
export function openAiEntryClients(settings: ProviderSettings, model: string): EntryClients {
  const client = sdkClient(settings);
  return {
    text: openAiChat(settings, model),
    image: makeImages(client, settings, model),
    embedding: makeEmbeddings(client, settings, model),
    transcription: makeTranscription(client, settings, model),
  };
}
