import { z } from 'zod';

import { aspectRatio, resolution } from '../db/queries/videos.ts';

/**
 * What the api stores in jobs.input for each generation job, and what the worker parses back.
 * Big payloads (OCR images, audio) live in object storage; the input carries their key. Bump a
 * shape with a new optional field, never by changing a field's meaning: queued jobs keep the old one.
 */
export const textJobInput = z.object({
  prompt: z.string(),
  system: z.string().optional(),
  maxTokens: z.number().int().min(1),
  stream: z.boolean(),
});
export type TextJobInput = z.infer<typeof textJobInput>;

export const imageJobInput = z.object({ prompt: z.string(), aspectRatio: z.string() });
export type ImageJobInput = z.infer<typeof imageJobInput>;

export const embeddingJobInput = z.object({ input: z.array(z.string()) });
export type EmbeddingJobInput = z.infer<typeof embeddingJobInput>;

export const transcriptionJobInput = z.object({
  objectKey: z.string(),
  mimeType: z.string(),
  filename: z.string(),
  sizeBytes: z.number().int().min(0),
  prompt: z.string().optional(),
  language: z.string().optional(),
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
