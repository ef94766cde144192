import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';

import { fixtureVideo, fixtureVideoSeconds } from '../videos/fixture.ts';
import { dimensionsFor, encodePng } from './png.ts';
import { estimateTokens } from './tokens.ts';
import type { ChatMessage, Providers } from './types.ts';

const fixtureModel = 'svc-test-fixture';

/**
 * The requester's words in the last user turn: what a stand-in without a model reports on (the
 * framing around them is for models).
 */
export function lastRequesterText(messages: ChatMessage[]): string {
  const last = messages.findLast((m) => m.role === 'user');
  return last?.requesterText ?? last?.content ?? '';
}

/** The deterministic reply a test key gets: it reports on the input and never follows it. */
export function fixtureReply(messages: ChatMessage[]): string {
  const last = lastRequesterText(messages);
  const excerpt = last.length > 120 ? `${last.slice(0, 120)}…` : last;
  return `Test mode reply. Received ${last.length} characters of input: "${excerpt}"`;
}

function vector(text: string): number[] {
  const digest = createHash('sha256').update(text).digest();
  const raw = Array.from({ length: 8 }, (_, i) => digest.readInt16BE(i * 2) / 32768);
  const norm = Math.hypot(...raw) || 1;
  return raw.map((v) => Math.round((v / norm) * 1e6) / 1e6);
}

/** Test-key fixtures (spec: deterministic, zero cost): same input, same output, no model involved. */
export const fixtureProviders: Providers = {
  chat: {
    async chat({ messages, onDelta, signal }) {
      const text = fixtureReply(messages);
      let produced = '';
      for (const word of text.split(/(?<= )/)) {
        if (signal.aborted) {
          return {
            text: produced,
            model: fixtureModel,
            usage: usageOf(messages, produced),
            finishReason: 'cancelled',
          };
        }
        produced += word;
        onDelta?.(word);
      }
      return { text, model: fixtureModel, usage: usageOf(messages, text), finishReason: 'stop' };
    },
  },
  images: {
    async generate({ prompt, aspectRatio }) {
      const seed = createHash('sha256').update(prompt).digest();
      const { width, height } = dimensionsFor(aspectRatio);
      const png = encodePng(width, height, (x, y) => [seed[0]! ^ x, seed[1]! ^ y, seed[2]!]);
      return {
        b64: png.toString('base64'),
        mimeType: 'image/png',
        model: fixtureModel,
        usage: { inputTokens: estimateTokens(prompt), outputTokens: 0 },
      };
    },
  },
  embeddings: {
    async embed({ input }) {
      return {
        vectors: input.map(vector),
        model: fixtureModel,
        usage: { inputTokens: input.reduce((n, t) => n + estimateTokens(t), 0) },
      };
    },
  },
  transcription: {
    async transcribe() {
      return { text: 'This is a test mode transcript.', model: fixtureModel, durationSeconds: 0 };
    },
  },
  ocr: {
    async extract() {
      return { text: 'Test mode OCR text.', pages: 1, model: fixtureModel, languages: ['eng'] };
    },
  },
  video: {
    async render({ aspectRatio, resolution, outputPath }) {
      await writeFile(outputPath, await fixtureVideo(aspectRatio, resolution));
      return { model: fixtureModel, durationSeconds: fixtureVideoSeconds, mimeType: 'video/mp4' };
    },
  },
};

function usageOf(messages: ChatMessage[], output: string) {
  return {
    inputTokens: messages.reduce((n, m) => n + estimateTokens(m.content), 0),
    outputTokens: estimateTokens(output),
  };
}
