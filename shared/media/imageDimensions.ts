/**
 * Image formats and their pixel dimensions read from the header alone, without decoding a pixel:
 * the api refuses an image too large to read before it is stored, and the worker checks again
 * before an OCR engine decodes it (decoding is where a small file becomes a huge bitmap).
 */

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif' | 'bmp' | 'pnm';

/** The image format from its leading bytes; undefined for anything tesseract cannot read (PDF, TIFF, AVIF …). */
export function sniffImageFormat(data: Buffer): ImageFormat | undefined {
  if (data.length >= 8 && data.readUInt32BE(0) === 0x89504e47) return 'png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'jpeg';
  if (
    data.length >= 12 &&
    data.toString('ascii', 0, 4) === 'RIFF' &&
    data.toString('ascii', 8, 12) === 'WEBP'
  ) {
    return 'webp';
  }
  if (data.length >= 6 && /^GIF8[79]a$/.test(data.toString('ascii', 0, 6))) return 'gif';
  if (data.length >= 26 && data.toString('ascii', 0, 2) === 'BM') return 'bmp';
  if (
    data.length >= 3 &&
    data[0] === 0x50 &&
    data[1]! >= 0x31 &&
    data[1]! <= 0x36 &&
    /\s/.test(String.fromCharCode(data[2]!))
  ) {
    return 'pnm';
  }
  return undefined;
}

export type ImageDimensions = {
  format: ImageFormat;
  width: number;
  height: number;
  /** Frames a decoder reads (an animated GIF's every frame; 1 otherwise). */
  frames: number;
  /**
   * Pixels a decoder materialises: width × height, or for a GIF the sum of its frames' areas
   * (at least its canvas), since giflib's DGifSlurp (leptonica's reader) decodes every frame.
   */
  pixels: number;
};

type Size = { width: number; height: number; frames?: number; pixels?: number };

function png(data: Buffer): Size | undefined {
  // Signature, then IHDR first: length (4), type (4), width (4), height (4).
  if (data.length < 24 || data.toString('ascii', 12, 16) !== 'IHDR') return undefined;
  return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
}

// Start-of-frame markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
const startOfFrame = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

function jpeg(data: Buffer): Size | undefined {
  // Walks the marker segments by their lengths, so an EXIF thumbnail's own SOF (inside APP1) is skipped.
  let at = 2;
  while (at + 4 <= data.length) {
    if (data[at] !== 0xff) return undefined;
    const marker = data[at + 1]!;
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    // Markers without a length: TEM and RSTn; SOS or EOI before any SOF means there is no frame header.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return undefined;
    const length = data.readUInt16BE(at + 2);
    if (length < 2) return undefined;
    if (startOfFrame.has(marker)) {
      if (at + 9 > data.length) return undefined;
      return { height: data.readUInt16BE(at + 5), width: data.readUInt16BE(at + 7) };
    }
    at += 2 + length;
  }
  return undefined;
}

function webp(data: Buffer): Size | undefined {
  if (data.length < 30) return undefined;
  const chunk = data.toString('ascii', 12, 16);
  if (chunk === 'VP8X') {
    // Extended format: the canvas, 24-bit little-endian, minus one; every frame lies within it.
    return { width: data.readUIntLE(24, 3) + 1, height: data.readUIntLE(27, 3) + 1 };
  }
  if (chunk === 'VP8L') {
    if (data[20] !== 0x2f) return undefined;
    const bits = data.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8 ') {
    // Lossy key frame: a 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and height.
    if (data[23] !== 0x9d || data[24] !== 0x01 || data[25] !== 0x2a) return undefined;
    return { width: data.readUInt16LE(26) & 0x3fff, height: data.readUInt16LE(28) & 0x3fff };
  }
  return undefined;
}

/** Skips a run of GIF data sub-blocks (length-prefixed, ended by an empty one); the offset after it. */
function skipSubBlocks(data: Buffer, at: number): number | undefined {
  while (at < data.length) {
    const size = data[at]!;
    at += 1 + size;
    if (size === 0) return at;
  }
  return undefined;
}

function gif(data: Buffer): Size | undefined {
  if (data.length < 13) return undefined;
  const width = data.readUInt16LE(6);
  const height = data.readUInt16LE(8);
  const flags = data[10]!;
  let at = 13 + (flags & 0x80 ? 3 * 2 ** ((flags & 0x07) + 1) : 0);
  let frames = 0;
  let framePixels = 0;
  // Every frame's descriptor: an animation of many full frames decodes all of them.
  while (at < data.length) {
    const block = data[at]!;
    if (block === 0x3b) break; // trailer
    if (block === 0x21) {
      const next = skipSubBlocks(data, at + 2);
      if (next === undefined) break;
      at = next;
    } else if (block === 0x2c) {
      if (at + 10 > data.length) break;
      frames += 1;
      framePixels += data.readUInt16LE(at + 5) * data.readUInt16LE(at + 7);
      const local = data[at + 9]!;
      at += 10 + (local & 0x80 ? 3 * 2 ** ((local & 0x07) + 1) : 0) + 1; // + LZW minimum code size
      const next = skipSubBlocks(data, at);
      if (next === undefined) break;
      at = next;
    } else {
      break;
    }
  }
  // A truncated file still counts what it declared; a decoder reads no less than the canvas.
  return { width, height, frames: Math.max(1, frames), pixels: Math.max(width * height, framePixels) };
}

function bmp(data: Buffer): Size | undefined {
  const headerSize = data.readUInt32LE(14);
  if (headerSize === 12) return { width: data.readUInt16LE(18), height: data.readUInt16LE(20) };
  if (headerSize < 40) return undefined;
  // Height is negative for top-down bitmaps.
  return { width: Math.abs(data.readInt32LE(18)), height: Math.abs(data.readInt32LE(22)) };
}

function pnm(data: Buffer): Size | undefined {
  // Magic, then whitespace-separated width and height, with `#` comments to the end of a line.
  const head = data.toString('latin1', 2, Math.min(data.length, 1024));
  const tokens = head.replace(/#[^\n\r]*/g, ' ').match(/\S+/g) ?? [];
  const [width, height] = tokens.slice(0, 2).map((token) => (/^\d{1,9}$/.test(token) ? Number(token) : NaN));
  if (width === undefined || height === undefined || Number.isNaN(width) || Number.isNaN(height)) {
    return undefined;
  }
  return { width, height };
}

const readers: Record<ImageFormat, (data: Buffer) => Size | undefined> = { png, jpeg, webp, gif, bmp, pnm };

/**
 * The format and pixel dimensions an image declares in its header, read without decoding it.
 * Undefined when the bytes are not a PNG, JPEG, WebP, GIF, BMP or PNM image, or its header is cut
 * short or malformed (a decoder could not size it either). Never throws.
 */
export function readImageDimensions(data: Buffer): ImageDimensions | undefined {
  const format = sniffImageFormat(data);
  if (!format) return undefined;
  let size: Size | undefined;
  try {
    size = readers[format](data);
  } catch {
    // A read past the end of a truncated header.
    return undefined;
  }
  if (!size || size.width <= 0 || size.height <= 0) return undefined;
  return {
    format,
    width: size.width,
    height: size.height,
    frames: size.frames ?? 1,
    pixels: size.pixels ?? size.width * size.height,
  };
}

function megapixels(pixels: number): string {
  return String(Math.round(pixels / 100_000) / 10);
}

/** The public reason an image over `maxPixels` is refused (the api's answer, the worker's job error). */
export function oversizedImageMessage(image: ImageDimensions, maxPixels: number): string {
  const frames = image.frames > 1 ? ` in ${image.frames} frames` : '';
  return `The image is ${image.width}×${image.height} pixels (${megapixels(image.pixels)} megapixels${frames}); OCR reads at most ${megapixels(maxPixels)} megapixels.`;
}
