import { z } from 'zod';

import { aspectRatio, resolution } from '../db/queries/videos.ts';

/**
 * What the api stores in jobs.input for each generation job, and what the worker parses back.
 * Big payloads (OCR images, audio) live in object storage; the input carries their key. Bump a
 * shape with a new optional field, never by changing a field's meaning: queued jobs keep the old one.
 */
const toolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

/** A compatible API's conversation, sent as it is instead of `prompt` and `system`. */
const chatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  toolCalls: z.array(toolCall).optional(),
  toolCallId: z.string().optional(),
});

/** What a compatible API's caller set beyond the messages (shared/providers/types.ts ChatOptions). */
const chatOptions = z.object({
  temperature: z.number().optional(),
  topP: z.number().optional(),
  stop: z.array(z.string()).optional(),
  user: z.string().optional(),
  tools: z.array(z.unknown()).optional(),
  toolChoice: z.unknown().optional(),
  responseFormat: z.unknown().optional(),
});

/** The named route a compatible API's `model` chose (shared/config/modelRoutes.ts); absent: the capability's own. */
const route = z.string().optional();

export const textJobInput = z.object({
  prompt: z.string(),
  system: z.string().optional(),
  maxTokens: z.number().int().min(1),
  stream: z.boolean(),
  route,
  messages: z.array(chatMessage).optional(),
  options: chatOptions.optional(),
});
export type TextJobInput = z.infer<typeof textJobInput>;

export const imageJobInput = z.object({ prompt: z.string(), aspectRatio: z.string(), route });
export type ImageJobInput = z.infer<typeof imageJobInput>;

export const embeddingJobInput = z.object({
  input: z.array(z.string()),
  route,
  dimensions: z.number().int().min(1).optional(),
});
export type EmbeddingJobInput = z.infer<typeof embeddingJobInput>;

export const transcriptionJobInput = z.object({
  objectKey: z.string(),
  mimeType: z.string(),
  filename: z.string(),
  sizeBytes: z.number().int().min(0),
  prompt: z.string().optional(),
  language: z.string().optional(),
  route,
});
export type TranscriptionJobInput = z.infer<typeof transcriptionJobInput>;

export const ocrJobInput = z.object({
  objectKey: z.string(),
  mimeType: z.string(),
  filename: z.string().optional(),
  languageHint: z.enum(['ne', 'en', 'auto']),
  sizeBytes: z.number().int().min(0),
});
export type OcrJobInput = z.infer<typeof ocrJobInput>;

const usage = z.object({ inputTokens: z.number(), outputTokens: z.number() });

/** What each synchronous job hands to its waiting request (once; see takeFinishedJob). */
export const textJobResult = z.object({ text: z.string(), model: z.string(), usage });
/**
 * The same job's result as a compatible API reads it: why the answer ended and the tool calls it
 * made too (POST /text's body has neither: textJobResult drops them).
 */
export const chatJobResult = textJobResult.extend({
  finishReason: z.enum(['stop', 'length', 'cancelled']).optional(),
  cachedInputTokens: z.number().optional(),
  cacheWriteInputTokens: z.number().optional(),
  /** The caller's stop sequence that ended the answer, where the provider said which (Anthropic's). */
  stopSequence: z.string().optional(),
  toolCalls: z.array(toolCall).optional(),
});
export type ChatJobResult = z.infer<typeof chatJobResult>;
export const imageJobResult = z.object({
  image: z.object({ b64: z.string(), mimeType: z.string() }),
  model: z.string(),
  usage,
});
export const embeddingJobResult = z.object({
  embeddings: z.array(z.array(z.number())),
  model: z.string(),
  usage: z.object({ inputTokens: z.number() }),
});
export const transcriptionJobResult = z.object({
  text: z.string(),
  model: z.string(),
  durationSeconds: z.number(),
});

/** Where uploaded inputs of generation jobs live in the bucket. */
export function inputObjectKey(kind: 'ocr' | 'audio', id: string): string {
  return `job-inputs/${kind}/${id}`;
}

/** Text generation budget: the default when maxTokens is absent, and the most any model is asked for. */
export const defaultMaxTokens = 4096;
export const maxTokensCeiling = 32_768;

/** Limits DESIGN.md fixes where the spec says "not shown". */
export const ocrMaxBytes = 20 * 1024 * 1024;
export const audioMaxBytes = 25 * 1024 * 1024;
/**
 * The most pixels an OCR image may declare (a 48-megapixel phone photo's full resolution is over;
 * a page scanned at 600 dpi, 35 megapixels, is under). Decoding is where a small file becomes a large
 * bitmap: an engine that reads 40 megapixels grows by about 450 MB while it does.
 */
export const ocrMaxPixels = 40_000_000;

/** video.generate: the video row to render into, and what to render (POST /videos). */
export const videoJobInput = z.object({
  videoId: z.string(),
  prompt: z.string(),
  negativePrompt: z.string().optional(),
  aspectRatio,
  resolution,
  durationSeconds: z.number().int().min(1).max(60),
  /** The member whose drive receives the file: the key's creator, or the person behind an OAuth token. */
  memberId: z.string(),
});
export type VideoJobInput = z.infer<typeof videoJobInput>;
