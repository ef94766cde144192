import { describe, expect, it } from '@jest/globals';

import { localModels } from '../../shared/config/localModels.ts';
import { sniffImageFormat } from '../../shared/media/imageDimensions.ts';
import { audioDurationSeconds, isAudioUpload, wavDurationSeconds } from '../../shared/providers/audio.ts';
import { renderDigitsPng } from '../../worker/providers/bitmapText.ts';
import { hashEmbedding, localChat } from '../../worker/providers/local.ts';
import { imageSize } from '../../worker/providers/openai.ts';
import { scrubSecrets } from '../../worker/providers/providerErrors.ts';
import { resolveOcrLanguages } from '../../worker/providers/tesseract.ts';
import { makeWav } from '../helpers/audio.ts';

const never = new AbortController().signal;

describe('local text stand-in', () => {
  it('echoes the prompt deterministically, labelled as a stand-in, streaming word by word', async () => {
    const deltas: string[] = [];
    const out = await localChat.chat({
      messages: [{ role: 'user', content: 'hello world' }],
      maxTokens: 100,
      signal: never,
      onDelta: (d) => deltas.push(d),
    });
    expect(out).toEqual({
      text: 'Local echo (offline stand-in, no model): hello world',
      model: localModels.text,
      usage: { inputTokens: 3, outputTokens: 13 },
      finishReason: 'stop',
    });
    expect(deltas.join('')).toBe(out.text);
  });

  it('stops at maxTokens and on abort', async () => {
    const cut = await localChat.chat({
      messages: [{ role: 'user', content: 'x '.repeat(100) }],
      maxTokens: 5,
      signal: never,
    });
    expect(cut.finishReason).toBe('length');
    expect(cut.text.length).toBeLessThanOrEqual(20);
    const aborted = await localChat.chat({
      messages: [{ role: 'user', content: 'x' }],
      maxTokens: 5,
      signal: AbortSignal.abort(),
    });
    expect(aborted).toMatchObject({ text: '', finishReason: 'cancelled' });
  });

  it('embeds texts sharing words closer together, as unit vectors', () => {
    const [a, b, c] = [
      hashEmbedding('red apple pie'),
      hashEmbedding('apple pie'),
      hashEmbedding('quarterly tax report'),
    ];
    const dot = (x: number[], y: number[]) => x.reduce((n, xi, i) => n + xi * y[i]!, 0);
    expect(dot(a, a)).toBeCloseTo(1, 4);
    expect(dot(a, b)).toBeGreaterThan(dot(a, c));
    expect(hashEmbedding('Apple PIE')).toEqual(b);
  });
});

describe('audio helpers', () => {
  it('reads a WAV duration from its header and estimates other formats from their size', () => {
    expect(wavDurationSeconds(makeWav(2.5))).toBeCloseTo(2.5, 3);
    expect(wavDurationSeconds(Buffer.from('ID3 not a wav'))).toBeUndefined();
    expect(audioDurationSeconds(Buffer.alloc(32_000))).toBe(2);
  });

  it.each([
    ['audio/mpeg', 'a.mp3', true],
    ['audio/wav; codecs=1', 'a', true],
    ['video/mp4', 'a.mp4', true],
    ['application/octet-stream', 'voice.M4A', true],
    ['application/octet-stream', 'notes.txt', false],
    ['text/plain', 'a.mp3', false],
    ['image/png', 'a.png', false],
  ])('%s named %s is audio: %s', (type, name, expected) => {
    expect(isAudioUpload(type, name)).toBe(expected);
  });
});

describe('OCR helpers', () => {
  it.each([
    ['en', undefined, ['eng']],
    ['ne', 'english.png', ['nep']],
    ['auto', 'notice_ne.png', ['nep']],
    ['auto', 'NEPALI-scan.jpg', ['nep']],
    ['auto', 'सूचना.png', ['nep']],
    ['auto', 'letter-en.png', ['eng']],
    ['auto', 'scan.png', ['eng', 'nep']],
    ['auto', undefined, ['eng', 'nep']],
    ['auto', 'phone.png', ['eng', 'nep']],
  ] as const)('hint %s with filename %s reads %j', (hint, filename, expected) => {
    expect(resolveOcrLanguages(hint, filename)).toEqual(expected);
  });

  it('recognises the image formats tesseract reads by their bytes', () => {
    expect(sniffImageFormat(renderDigitsPng('1'))).toBe('png');
    expect(sniffImageFormat(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('jpeg');
    expect(sniffImageFormat(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBe('webp');
    expect(sniffImageFormat(Buffer.from('GIF89a......'))).toBe('gif');
    expect(sniffImageFormat(Buffer.from('P5\n1 1\n255\n\0'))).toBe('pnm');
    expect(sniffImageFormat(Buffer.from('%PDF-1.7'))).toBeUndefined();
    expect(sniffImageFormat(Buffer.from('II*\0'))).toBeUndefined();
  });
});

describe('openai helpers', () => {
  it('picks the provider size nearest each aspect ratio', () => {
    expect(imageSize('gpt-image-1', '1:1')).toBe('1024x1024');
    expect(imageSize('gpt-image-1', '4:3')).toBe('1536x1024');
    expect(imageSize('gpt-image-1', '3:4')).toBe('1024x1536');
    expect(imageSize('dall-e-3', '16:9')).toBe('1792x1024');
    expect(imageSize('dall-e-2', '9:16')).toBe('1024x1024');
  });

  it('scrubs the configured key and anything shaped like one', () => {
    const key = 'my-proxy-token-123';
    expect(scrubSecrets(`bad key ${key} given`, key)).toBe('bad key [redacted] given');
    expect(scrubSecrets('Incorrect API key provided: sk-proj-abc***xyz.', undefined)).toBe(
      'Incorrect API key provided: [redacted]',
    );
    expect(scrubSecrets('header Bearer abc.def', undefined)).toBe('header Bearer [redacted]');
  });
});
