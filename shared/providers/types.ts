import type { TextUsage } from '../config/prices.ts';
import type { Answerer } from '../config/providersConfig.ts';
import type { AspectRatio, Resolution } from '../db/queries/videos.ts';

/**
 * One interface per model capability (DESIGN.md "Providers"). Test keys get the deterministic
 * fixtures; live keys get the configured provider (`local` or `openai`). Only workers call these.
 */
/** A capability's provider: one method from a request (which carries its abort signal) to a promised answer. */
type Provider<Method extends string, Request extends { signal: AbortSignal }, Answer> = {
  [M in Method]: (request: Request) => Promise<Answer>;
};

export type TokenUsage = { inputTokens: number; outputTokens: number };
export type { TextUsage };

/** The route entry that answered a live call (see PROVIDERS). */
export type { Answerer };

/** A function call a model asked for (OpenAI's shape; its arguments are the model's JSON text). */
export type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

/**
 * What a compatible API's caller may ask of a chat beyond its messages, passed through to providers
 * whose protocol takes it (the OpenAI-compatible ones): sampling, stop sequences, tools and a
 * response format. Tools and the response format are JSON the caller wrote, sent on unread.
 */
export type ChatOptions = {
  temperature?: number;
  topP?: number;
  stop?: string[];
  user?: string;
  tools?: unknown[];
  toolChoice?: unknown;
  responseFormat?: unknown;
};

export type ChatMessage = {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant turn's tool calls, sent back with the conversation (OpenAI-compatible routes only). */
  toolCalls?: ToolCall[];
  /** A `tool` turn: the call it answers. */
  toolCallId?: string;
  /**
   * The requester's own words, when `content` frames them as delimited data for a model. The offline
   * stand-ins (test-key fixtures, the local echo) report on these, never on the framing; providers
   * that call a model send only `role` and `content`.
   */
  requesterText?: string;
};

export type TextGeneration = {
  text: string;
  model: string;
  /** With the prompt's cached reads and cache writes where the provider reported them. */
  usage: TextUsage;
  /**
   * `length` when the answer reached `maxTokens`, or its provider's whole-answer deadline ended it
   * while it still flowed (the caller's length, not the provider's failure); `cancelled` when the
   * signal aborted mid-generation. Either way `text` and `usage` cover what was produced.
   */
  finishReason: 'stop' | 'length' | 'cancelled';
  /** Which of the caller's stop sequences ended a `stop`, where the provider says (Anthropic does). */
  stopSequence?: string;
  /** The tool calls the model asked for instead of (or with) text, when the request offered tools. */
  toolCalls?: ToolCall[];
  answeredBy?: Answerer;
};

export type ChatRequest = {
  messages: ChatMessage[];
  maxTokens: number;
  signal: AbortSignal;
  /**
   * How many of the leading messages later calls send again unchanged (a task's earlier turns):
   * a provider with explicit prompt caching (Anthropic) marks where that prefix ends.
   */
  stablePrefix?: number;
  /** Called with each piece of text as it is produced (streaming). */
  onDelta?: (text: string) => void;
  /** The named route a compatible API's `model` chose (shared/config/modelRoutes.ts); else the capability's own. */
  route?: string;
  options?: ChatOptions;
};

export type ChatProvider = Provider<'chat', ChatRequest, TextGeneration>;

export type ImageRequest = { prompt: string; aspectRatio: string; signal: AbortSignal; route?: string };
export type ImageGeneration = {
  b64: string;
  mimeType: string;
  model: string;
  usage: TokenUsage;
  answeredBy?: Answerer;
};
export type ImageProvider = Provider<'generate', ImageRequest, ImageGeneration>;

export type EmbeddingRequest = {
  input: string[];
  signal: AbortSignal;
  route?: string;
  /** Fewer dimensions, for models that take `dimensions` (OpenAI's text-embedding-3). */
  dimensions?: number;
};
export type EmbeddingResult = {
  vectors: number[][];
  model: string;
  usage: { inputTokens: number };
  answeredBy?: Answerer;
};
export type EmbeddingProvider = Provider<'embed', EmbeddingRequest, EmbeddingResult>;

export type TranscriptionRequest = {
  audio: Buffer;
  mimeType: string;
  filename: string;
  /** Optional hint for the model (vocabulary, spelling of names). */
  prompt?: string;
  /** ISO-639-1 language of the audio, when the caller knows it. */
  language?: string;
  signal: AbortSignal;
  route?: string;
};
export type TranscriptionResult = {
  text: string;
  model: string;
  durationSeconds: number;
  answeredBy?: Answerer;
};
export type TranscriptionProvider = Provider<'transcribe', TranscriptionRequest, TranscriptionResult>;

export type OcrRequest = {
  data: Buffer;
  mimeType: string;
  filename: string | undefined;
  languageHint: 'ne' | 'en' | 'auto';
  signal: AbortSignal;
};
/** `languages` are the tesseract language codes the text was read with (eng, nep). */
export type OcrResult = { text: string; pages: number; model: string; languages: string[] };
export type OcrProvider = Provider<'extract', OcrRequest, OcrResult>;

export type VideoRequest = {
  prompt: string;
  negativePrompt?: string;
  aspectRatio: AspectRatio;
  resolution: Resolution;
  durationSeconds: number;
  /** Where the MP4 is written: a temporary file the caller owns (and deletes). */
  outputPath: string;
  signal: AbortSignal;
};
/** `durationSeconds` is the rendered clip's length, what the render is billed by. */
export type VideoResult = { model: string; durationSeconds: number; mimeType: 'video/mp4' };
export type VideoProvider = Provider<'render', VideoRequest, VideoResult>;

export type Providers = {
  chat: ChatProvider;
  images: ImageProvider;
  embeddings: EmbeddingProvider;
  transcription: TranscriptionProvider;
  ocr: OcrProvider;
  video: VideoProvider;
};

/** A provider failure; `retryable` says whether trying again may help (timeouts, 5xx, 429). */
export class ProviderError extends Error {
  readonly retryable: boolean;
  /** The provider's HTTP status, when it answered with one. */
  readonly status: number | undefined;
  /** How long the provider asked to be left alone (its Retry-After), when it did. */
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    retryable: boolean,
    options?: { cause?: unknown; status?: number; retryAfterMs?: number },
  ) {
    super(message, options);
    this.name = 'ProviderError';
    this.retryable = retryable;
    this.status = options?.status;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

// Statuses where the same request may succeed later: timeouts, conflicts, too early, rate limits.
const retryableStatuses = new Set([408, 409, 425, 429]);

/** Whether the same request may succeed later (there, or at another provider): those above and every 5xx. */
export function isRetryableStatus(status: number): boolean {
  return retryableStatuses.has(status) || (status >= 500 && status < 600);
}

/** A Retry-After header's wait in milliseconds (delta-seconds or an HTTP date); undefined if absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.min(seconds, 3600) * 1000 : undefined;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - now), 3_600_000);
}
