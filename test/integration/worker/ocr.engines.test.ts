import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import type { OcrRequest } from '../../../shared/providers/types.ts';
import type { WorkerContext } from '../../../worker/context.ts';
import { ocrProbe } from '../../../worker/probes.ts';
import { renderDigitsPng } from '../../../worker/providers/bitmapText.ts';
import { makeTesseractOcr } from '../../../worker/providers/tesseract.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { pngHeader } from '../../helpers/imageHeaders.ts';
import { renderNoisePng } from '../../helpers/textImage.ts';
import { workerContextFor } from '../../helpers/workerContext.ts';

/**
 * The OCR engines of a worker process, with real tesseract: a pool of OCR_ENGINES engines, each
 * read bounded by OCR_TIMEOUT_MS, images over the pixel limit refused before any engine decodes
 * them, and the status probe on an engine of its own. The slow image is random noise (seconds of
 * recognition); orderings are read from which promise settled first, not from the clock.
 */
let t: TestContext;
let ctx: WorkerContext;
const noise = renderNoisePng();
const digits = renderDigitsPng('4711');
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  // One job engine: anything the probe reads while it is busy, it reads on its own.
  t = await setupTestContext({ OCR_ENGINES: '1', OCR_TIMEOUT_MS: '60000' });
  ctx = workerContextFor(t);
  closers.push(() => ctx.close());
});
afterAll(async () => {
  for (const close of closers) await close();
  await t.close();
});

function pool(engines: number, timeoutMs: number) {
  const ocr = makeTesseractOcr({ engines, timeoutMs });
  closers.push(() => ocr.close());
  return ocr;
}

const read = (data: Buffer, signal = new AbortController().signal): OcrRequest => ({
  data,
  mimeType: 'image/png',
  filename: undefined,
  languageHint: 'en',
  signal,
});

/** Records the order in which labelled promises settle. */
function settleOrder() {
  const order: string[] = [];
  return {
    order,
    track<T>(label: string, promise: Promise<T>): Promise<T> {
      promise.then(
        () => order.push(label),
        () => order.push(label),
      );
      return promise;
    },
  };
}

describe('OCR engines', () => {
  it('ends a read past the timeout with OcrTimeoutError, and the next read gets a working engine', async () => {
    const ocr = pool(1, 3000);
    const timedOut = await ocr.extract(read(noise)).catch((error: unknown) => error);
    expect(timedOut).toMatchObject({
      name: 'OcrTimeoutError',
      publicCode: 'file_too_large',
      retryable: false,
      message: expect.stringContaining('did not finish within 3 seconds'),
    });
    // The only engine was busy with the noise until it was ended: this read needs it back.
    expect(await ocr.extract(read(digits))).toMatchObject({ text: '4711' });
  });

  it('reads two images at once with two engines: a quick read does not wait for a slow one', async () => {
    const ocr = pool(2, 60_000);
    const slow = new AbortController();
    const { order, track } = settleOrder();
    const noiseRead = track('noise', ocr.extract(read(noise, slow.signal))).catch((error: unknown) => error);
    const digitsRead = track('digits', ocr.extract(read(digits)));
    expect(await digitsRead).toMatchObject({ text: '4711' });
    expect(order).toEqual(['digits']);
    slow.abort(new Error('test done'));
    expect(await noiseRead).toMatchObject({ message: 'test done' });
  });

  it('refuses an image over the pixel limit without waiting for an engine or decoding it', async () => {
    const ocr = pool(1, 60_000);
    const slow = new AbortController();
    const { order, track } = settleOrder();
    const noiseRead = track('noise', ocr.extract(read(noise, slow.signal))).catch((error: unknown) => error);
    // Declares 8000 × 6000 and holds no pixel data: a decoder would fail on it, after the engine was free.
    const refused = await track('huge', ocr.extract(read(pngHeader(8000, 6000)))).catch(
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({
      name: 'ImageTooLargeError',
      publicCode: 'file_too_large',
      retryable: false,
      message: 'The image is 8000×6000 pixels (48 megapixels); OCR reads at most 40 megapixels.',
    });
    expect(order).toEqual(['huge']);
    slow.abort(new Error('test done'));
    await noiseRead;
  });

  it('lets the status probe read on its own engine while every job engine is busy', async () => {
    // ctx's job engines: OCR_ENGINES=1, taken by the noise.
    const slow = new AbortController();
    const { order, track } = settleOrder();
    const noiseRead = track('noise', ctx.providers(true).ocr.extract(read(noise, slow.signal))).catch(
      (error: unknown) => error,
    );
    const probed = await track('probe', ocrProbe(ctx, new AbortController().signal));
    expect(probed).toEqual({
      state: expect.stringMatching(/^(operational|degraded)$/),
      latencyMs: expect.any(Number),
    });
    expect(order).toEqual(['probe']);
    slow.abort(new Error('test done'));
    await noiseRead;
  });
});
