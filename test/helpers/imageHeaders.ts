import { crc32 } from 'node:zlib';

/**
 * Image files built byte by byte from their format specifications, for header parsing: sizes no
 * canvas library writes (over the OCR pixel limit) and layouts it never chooses (VP8 and VP8L WebP,
 * animated GIF, top-down BMP). Their pixel data is absent or a stub: decoders would refuse them.
 */

/** A PNG signature and IHDR chunk declaring `width` × `height`, and nothing after it. */
export function pngHeader(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const body = Buffer.concat([Buffer.from('IHDR', 'ascii'), ihdr]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(ihdr.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), length, body, crc]);
}

/** A JPEG marker segment: marker, big-endian length (itself included), payload. */
export function jpegSegment(marker: number, payload: Buffer): Buffer {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([head, payload]);
}

/** A start-of-frame payload (`marker` 0xc0 baseline, 0xc2 progressive …) for one 8-bit component. */
export function sofPayload(width: number, height: number): Buffer {
  const payload = Buffer.from([8, 0, 0, 0, 0, 1, 1, 0x11, 0]);
  payload.writeUInt16BE(height, 1);
  payload.writeUInt16BE(width, 3);
  return payload;
}

/** SOI, the given segments, then a scan start (whose data is not included). */
export function jpegWith(...segments: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8]), ...segments, jpegSegment(0xda, Buffer.alloc(8))]);
}

function riff(chunk: string, data: Buffer): Buffer {
  const head = Buffer.alloc(20);
  head.write('RIFF', 0, 'ascii');
  head.writeUInt32LE(12 + data.length, 4);
  head.write('WEBP', 8, 'ascii');
  head.write(chunk, 12, 'ascii');
  head.writeUInt32LE(data.length, 16);
  return Buffer.concat([head, data]);
}

/** A lossy (VP8) WebP key frame header: frame tag, start code, 14-bit width and height. */
export function webpLossy(width: number, height: number): Buffer {
  const data = Buffer.alloc(16);
  data[0] = 0x10; // frame tag: key frame, version 0, shown
  data[3] = 0x9d;
  data[4] = 0x01;
  data[5] = 0x2a;
  data.writeUInt16LE(width & 0x3fff, 6);
  data.writeUInt16LE(height & 0x3fff, 8);
  return riff('VP8 ', data);
}

/** A lossless (VP8L) WebP header: signature 0x2f, then 14-bit width − 1 and height − 1. */
export function webpLossless(width: number, height: number): Buffer {
  const data = Buffer.alloc(16);
  data[0] = 0x2f;
  data.writeUInt32LE(((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14), 1);
  return riff('VP8L', data);
}

/** An extended (VP8X) WebP header: flags, then 24-bit canvas width − 1 and height − 1. */
export function webpExtended(width: number, height: number): Buffer {
  const data = Buffer.alloc(10);
  data.writeUIntLE(width - 1, 4, 3);
  data.writeUIntLE(height - 1, 7, 3);
  return riff('VP8X', Buffer.concat([data, Buffer.alloc(8)]));
}

/**
 * A GIF89a with a `width` × `height` canvas (global colour table of 2) and one image descriptor per
 * entry of `frames`, each with a stub of LZW data in sub-blocks and a comment extension between them.
 */
export function gif(width: number, height: number, frames: { width: number; height: number }[]): Buffer {
  const head = Buffer.alloc(13);
  head.write('GIF89a', 0, 'ascii');
  head.writeUInt16LE(width, 6);
  head.writeUInt16LE(height, 8);
  head[10] = 0x80; // global colour table, 2 entries
  const parts = [head, Buffer.alloc(6)];
  for (const frame of frames) {
    parts.push(Buffer.from([0x21, 0xfe, 3, 0x61, 0x62, 0x63, 0])); // comment "abc"
    const descriptor = Buffer.alloc(10);
    descriptor[0] = 0x2c;
    descriptor.writeUInt16LE(frame.width, 5);
    descriptor.writeUInt16LE(frame.height, 7);
    parts.push(descriptor, Buffer.from([2, 255]), Buffer.alloc(255, 0x55), Buffer.from([2, 1, 2, 0]));
  }
  parts.push(Buffer.from([0x3b]));
  return Buffer.concat(parts);
}

/** A BMP file and BITMAPINFOHEADER (40 bytes); a negative height is a top-down bitmap. */
export function bmp(width: number, height: number): Buffer {
  const data = Buffer.alloc(54);
  data.write('BM', 0, 'ascii');
  data.writeUInt32LE(54, 2);
  data.writeUInt32LE(54, 10);
  data.writeUInt32LE(40, 14);
  data.writeInt32LE(width, 18);
  data.writeInt32LE(height, 22);
  data.writeUInt16LE(1, 26);
  data.writeUInt16LE(24, 28);
  return data;
}

/** A BMP with the old OS/2 BITMAPCOREHEADER (12 bytes, 16-bit sizes). */
export function bmpCore(width: number, height: number): Buffer {
  const data = Buffer.alloc(26);
  data.write('BM', 0, 'ascii');
  data.writeUInt32LE(12, 14);
  data.writeUInt16LE(width, 18);
  data.writeUInt16LE(height, 20);
  return data;
}
