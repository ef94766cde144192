import { describe, expect, it } from '@jest/globals';
import { createCanvas } from '@napi-rs/canvas';

import { ocrMaxPixels } from '../../shared/jobs/generationInputs.ts';
import { oversizedImageMessage, readImageDimensions } from '../../shared/media/imageDimensions.ts';
import { encodePng } from '../../shared/providers/png.ts';
import {
  bmp,
  bmpCore,
  gif,
  jpegSegment,
  jpegWith,
  pngHeader,
  sofPayload,
  webpExtended,
  webpLossless,
  webpLossy,
} from '../helpers/imageHeaders.ts';

function canvasImage(mime: 'image/png' | 'image/jpeg' | 'image/webp', width: number, height: number): Buffer {
  const canvas = createCanvas(width, height);
  const g = canvas.getContext('2d');
  g.fillStyle = 'white';
  g.fillRect(0, 0, width, height);
  return canvas.toBuffer(mime as 'image/png');
}

describe('readImageDimensions', () => {
  it.each([
    ['PNG', 'png', canvasImage('image/png', 321, 123)],
    ['JPEG', 'jpeg', canvasImage('image/jpeg', 321, 123)],
    ['WebP', 'webp', canvasImage('image/webp', 321, 123)],
  ] as const)('reads the size of a %s written by an encoder', (_name, format, data) => {
    expect(readImageDimensions(data)).toEqual({ format, width: 321, height: 123, frames: 1, pixels: 39_483 });
  });

  it('reads our own PNG encoder’s images', () => {
    expect(readImageDimensions(encodePng(7, 5, () => [0, 0, 0]))).toMatchObject({ width: 7, height: 5 });
  });

  it('walks JPEG segments, skipping an EXIF thumbnail’s frame header, for baseline and progressive frames', () => {
    // An APP1 segment whose bytes hold a 160×120 SOF0 (a thumbnail), before the real frame header.
    const thumbnail = jpegSegment(
      0xe1,
      Buffer.concat([Buffer.from('Exif\0\0'), jpegSegment(0xc0, sofPayload(160, 120))]),
    );
    expect(readImageDimensions(jpegWith(thumbnail, jpegSegment(0xc0, sofPayload(6000, 4000))))).toMatchObject(
      {
        format: 'jpeg',
        width: 6000,
        height: 4000,
        pixels: 24_000_000,
      },
    );
    const tables = jpegSegment(0xc4, Buffer.alloc(20)); // DHT shares the SOF range but is no frame
    expect(readImageDimensions(jpegWith(tables, jpegSegment(0xc2, sofPayload(9000, 5000))))).toMatchObject({
      width: 9000,
      height: 5000,
    });
    // Fill bytes between segments are allowed.
    const filled = Buffer.concat([
      Buffer.from([0xff, 0xd8, 0xff, 0xff]),
      jpegSegment(0xc1, sofPayload(10, 20)),
    ]);
    expect(readImageDimensions(filled)).toMatchObject({ width: 10, height: 20 });
  });

  it('reads lossy, lossless and extended WebP headers', () => {
    expect(readImageDimensions(webpLossy(16_383, 9_000))).toMatchObject({
      format: 'webp',
      width: 16_383,
      height: 9_000,
    });
    expect(readImageDimensions(webpLossless(12_000, 4_000))).toMatchObject({ width: 12_000, height: 4_000 });
    expect(readImageDimensions(webpExtended(20_000, 10_000))).toMatchObject({
      width: 20_000,
      height: 10_000,
    });
  });

  it('counts every frame of an animated GIF, since its decoder reads them all', () => {
    expect(readImageDimensions(gif(100, 50, [{ width: 100, height: 50 }]))).toEqual({
      format: 'gif',
      width: 100,
      height: 50,
      frames: 1,
      pixels: 5_000,
    });
    const frames = Array.from({ length: 12 }, () => ({ width: 2_000, height: 2_000 }));
    expect(readImageDimensions(gif(2_000, 2_000, frames))).toMatchObject({ frames: 12, pixels: 48_000_000 });
    // A frame larger than the canvas counts at its own size.
    expect(readImageDimensions(gif(10, 10, [{ width: 8_000, height: 6_000 }]))).toMatchObject({
      pixels: 48_000_000,
    });
  });

  it('reads BMP info and core headers, top-down bitmaps included, and PNM with comments', () => {
    expect(readImageDimensions(bmp(4_000, -3_000))).toMatchObject({
      format: 'bmp',
      width: 4_000,
      height: 3_000,
    });
    expect(readImageDimensions(bmpCore(640, 480))).toMatchObject({ format: 'bmp', width: 640, height: 480 });
    const pgm = Buffer.from('P5\n# scanned by a test\n8000 # width\n6000\n255\n\0\0');
    expect(readImageDimensions(pgm)).toMatchObject({
      format: 'pnm',
      width: 8_000,
      height: 6_000,
      pixels: 48e6,
    });
    expect(readImageDimensions(Buffer.from('P1 3 2 0 1 0 1 0 1'))).toMatchObject({ width: 3, height: 2 });
  });

  it('answers undefined for other formats and for headers a decoder could not size either', () => {
    expect(readImageDimensions(Buffer.from('%PDF-1.7\n'))).toBeUndefined();
    expect(readImageDimensions(Buffer.from('II*\0\0\0\0\0'))).toBeUndefined();
    expect(readImageDimensions(pngHeader(100, 100).subarray(0, 20))).toBeUndefined();
    expect(readImageDimensions(pngHeader(0, 100))).toBeUndefined();
    // A scan before any frame header, a frame height of 0 (defined later by DNL), a cut segment.
    expect(readImageDimensions(jpegWith(jpegSegment(0xe0, Buffer.alloc(14))))).toBeUndefined();
    expect(readImageDimensions(jpegWith(jpegSegment(0xc0, sofPayload(100, 0))))).toBeUndefined();
    expect(
      readImageDimensions(jpegWith(jpegSegment(0xc0, sofPayload(100, 100))).subarray(0, 8)),
    ).toBeUndefined();
    expect(readImageDimensions(Buffer.from('P6\n# only a comment\n'))).toBeUndefined();
    expect(readImageDimensions(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBeUndefined();
  });
});

describe('oversizedImageMessage', () => {
  it('names the size, the frames and the limit', () => {
    const image = readImageDimensions(pngHeader(8_000, 6_000))!;
    expect(oversizedImageMessage(image, ocrMaxPixels)).toBe(
      'The image is 8000×6000 pixels (48 megapixels); OCR reads at most 40 megapixels.',
    );
    const animated = readImageDimensions(
      gif(
        2_000,
        2_000,
        Array.from({ length: 11 }, () => ({ width: 2_000, height: 2_000 })),
      ),
    )!;
    expect(oversizedImageMessage(animated, ocrMaxPixels)).toBe(
      'The image is 2000×2000 pixels (44 megapixels in 11 frames); OCR reads at most 40 megapixels.',
    );
  });
});
