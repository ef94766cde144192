import { createRequire } from 'node:module';
import path from 'node:path';

import { createCanvas, GlobalFonts } from '@napi-rs/canvas';

import { encodePng } from '../../shared/providers/png.ts';

const require = createRequire(import.meta.url);
let registered = false;

/**
 * Fonts from npm (Noto Sans Devanagari, with its Latin subset): no system fonts, no download, so
 * the rendered images are the same on every machine. Skia shapes the Devanagari (conjuncts,
 * vowel signs) as a browser would.
 */
function registerFonts(): void {
  if (registered) return;
  const files = path.join(
    path.dirname(require.resolve('@fontsource/noto-sans-devanagari/package.json')),
    'files',
  );
  GlobalFonts.registerFromPath(path.join(files, 'noto-sans-devanagari-latin-400-normal.woff'), 'Test Latin');
  GlobalFonts.registerFromPath(
    path.join(files, 'noto-sans-devanagari-devanagari-400-normal.woff'),
    'Test Devanagari',
  );
  registered = true;
}

/** A PNG of `lines` in black on white, large enough for OCR (48 px type). */
export function renderTextPng(lines: string[], script: 'latin' | 'devanagari'): Buffer {
  registerFonts();
  const lineHeight = 72;
  const width = 1000;
  const canvas = createCanvas(width, 40 + lines.length * lineHeight);
  const g = canvas.getContext('2d');
  g.fillStyle = 'white';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = 'black';
  g.font = `48px "${script === 'latin' ? 'Test Latin' : 'Test Devanagari'}"`;
  g.textBaseline = 'middle';
  lines.forEach((line, i) => g.fillText(line, 30, 20 + lineHeight * (i + 0.5)));
  return canvas.toBuffer('image/png');
}

/**
 * A PNG of random black and white dots (deterministic for a seed): tesseract hunts for text in it
 * for many seconds (a 1500 × 1500 one takes about 10 s on an idle core), where a line of digits takes
 * a fraction of one. Tests use it as the slow image a tenant might send.
 */
export function renderNoisePng(size = 1500, seed = 12345): Buffer {
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state;
  };
  return encodePng(size, size, () => {
    const v = (next() >> 16) & 1 ? 0 : 255;
    return [v, v, v];
  });
}
