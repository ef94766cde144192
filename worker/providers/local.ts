import { createHash } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

import { localModels } from '../../shared/config/localModels.ts';
import { audioDurationSeconds } from '../../shared/providers/audio.ts';
import { lastRequesterText } from '../../shared/providers/fixtures.ts';
import { dimensionsFor, encodePng } from '../../shared/providers/png.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import type {
  ChatMessage,
  ChatProvider,
  EmbeddingProvider,
  ImageProvider,
  TranscriptionProvider,
} from '../../shared/providers/types.ts';

/**
 * The built-in `local` provider's offline stand-ins (DESIGN.md "Providers"): deterministic, free of
 * any model download, and labelled as stand-ins in `model` so nobody mistakes them for a model.
 * OCR is real and lives in tesseract.ts.
 */

export function localReply(messages: ChatMessage[]): string {
  return `Local echo (offline stand-in, no model): ${lastRequesterText(messages)}`;
}

/** Cuts `text` to about `maxTokens` tokens at a word boundary where one is near. */
function truncateToTokens(text: string, maxTokens: number): { text: string; truncated: boolean } {
  const maxChars = maxTokens * 4;
  if (text.length <= maxChars) return { text, truncated: false };
  const cut = text.slice(0, maxChars);
  const space = cut.lastIndexOf(' ');
  return { text: space > maxChars / 2 ? cut.slice(0, space + 1) : cut, truncated: true };
}

export const localChat: ChatProvider = {
  async chat({ messages, maxTokens, signal, onDelta }) {
    const { text, truncated } = truncateToTokens(localReply(messages), maxTokens);
    const inputTokens = messages.reduce((n, m) => n + estimateTokens(m.content), 0);
    let produced = '';
    for (const word of text.split(/(?<= )/)) {
      // Yield between words so a cancellation can land mid-reply, as it would with a real model.
      await yieldToLoop();
      if (signal.aborted) {
        return {
          text: produced,
          model: localModels.text,
          usage: { inputTokens, outputTokens: estimateTokens(produced) },
          finishReason: 'cancelled',
        };
      }
      produced += word;
      onDelta?.(word);
    }
    return {
      text,
      model: localModels.text,
      usage: { inputTokens, outputTokens: estimateTokens(text) },
      finishReason: truncated ? 'length' : 'stop',
    };
  },
};

export const localImages: ImageProvider = {
  async generate({ prompt, aspectRatio }) {
    const seed = createHash('sha256').update(prompt).digest();
    const { width, height } = dimensionsFor(aspectRatio, 256);
    const png = encodePng(width, height, (x, y) => [
      (seed[0]! + x * (seed[3]! % 7)) & 255,
      (seed[1]! + y * (seed[4]! % 5)) & 255,
      (seed[2]! + ((x ^ y) & seed[5]!)) & 255,
    ]);
    return {
      b64: png.toString('base64'),
      mimeType: 'image/png',
      model: localModels.image,
      usage: { inputTokens: estimateTokens(prompt), outputTokens: 0 },
    };
  },
};

const embeddingDimensions = 256;

/**
 * Feature hashing of lower-cased words into a unit vector: texts sharing words get similar vectors,
 * which keeps similarity search usable offline (lexical, not semantic).
 */
export function hashEmbedding(text: string): number[] {
  const v = new Array<number>(embeddingDimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const h = createHash('sha256').update(word).digest();
    v[h.readUInt16BE(0) % embeddingDimensions]! += h[2]! & 1 ? 1 : -1;
  }
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => Math.round((x / norm) * 1e6) / 1e6);
}

export const localEmbeddings: EmbeddingProvider = {
  async embed({ input }) {
    return {
      vectors: input.map(hashEmbedding),
      model: localModels.embedding,
      usage: { inputTokens: input.reduce((n, t) => n + estimateTokens(t), 0) },
    };
  },
};

export const localTranscription: TranscriptionProvider = {
  async transcribe({ audio, mimeType }) {
    const durationSeconds = Math.round(audioDurationSeconds(audio) * 100) / 100;
    return {
      text: `[Local stand-in transcript: ${durationSeconds} s of ${mimeType} audio received; set PROVIDER=openai for speech recognition.]`,
      model: localModels.transcription,
      durationSeconds,
    };
  },
};
