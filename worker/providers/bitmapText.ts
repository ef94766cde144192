import { encodePng } from '../../shared/providers/png.ts';

// A 5×7 bitmap font for digits: enough to make an image with known text without any font file.
const glyphs: Record<string, string[]> = {
  '0': ['01110', '10001', '10001', '10001', '10001', '10001', '01110'],
  '1': ['00100', '01100', '00100', '00100', '00100', '00100', '01110'],
  '2': ['01110', '10001', '00001', '00010', '00100', '01000', '11111'],
  '3': ['11111', '00010', '00100', '00010', '00001', '10001', '01110'],
  '4': ['00010', '00110', '01010', '10010', '11111', '00010', '00010'],
  '5': ['11111', '10000', '11110', '00001', '00001', '10001', '01110'],
  '6': ['00110', '01000', '10000', '11110', '10001', '10001', '01110'],
  '7': ['11111', '00001', '00010', '00100', '01000', '01000', '01000'],
  '8': ['01110', '10001', '10001', '01110', '10001', '10001', '01110'],
  '9': ['01110', '10001', '10001', '01111', '00001', '00010', '01100'],
  ' ': ['00000', '00000', '00000', '00000', '00000', '00000', '00000'],
};

/**
 * Renders digits (and spaces) as a dot-matrix PNG, anti-aliased, black on white: the OCR status
 * probe reads it back to prove the engine and its language data work, with no font file. Round,
 * overlapping dots read far more reliably with tesseract's LSTM than square bitmap pixels do.
 * @throws Error for characters outside the font.
 */
export function renderDigitsPng(text: string, scale = 6, dotRadius = 0.75): Buffer {
  const chars = [...text].map((ch) => {
    const glyph = glyphs[ch];
    if (!glyph) throw new Error(`no glyph for '${ch}'`);
    return glyph;
  });
  const margin = 4 * scale;
  const advance = 6 * scale;
  const dots: [number, number][] = [];
  chars.forEach((glyph, i) =>
    glyph.forEach((row, gy) =>
      [...row].forEach((bit, gx) => {
        if (bit === '1') dots.push([margin + i * advance + (gx + 0.5) * scale, margin + (gy + 0.5) * scale]);
      }),
    ),
  );
  const width = margin * 2 + chars.length * advance;
  const height = margin * 2 + 7 * scale;
  const radius = dotRadius * scale;
  // Distance to the nearest dot, filled dot by dot over each dot's neighbourhood only.
  const nearest = new Float32Array(width * height).fill(Infinity);
  const reach = Math.ceil(radius + 1);
  for (const [cx, cy] of dots) {
    for (
      let y = Math.max(0, Math.floor(cy) - reach);
      y <= Math.min(height - 1, Math.floor(cy) + reach);
      y++
    ) {
      for (
        let x = Math.max(0, Math.floor(cx) - reach);
        x <= Math.min(width - 1, Math.floor(cx) + reach);
        x++
      ) {
        const d = Math.hypot(x + 0.5 - cx, y + 0.5 - cy);
        if (d < nearest[y * width + x]!) nearest[y * width + x] = d;
      }
    }
  }
  return encodePng(width, height, (x, y) => {
    // Coverage falls from 1 to 0 across one pixel at the dot's edge.
    const shade = Math.round(255 * Math.max(0, Math.min(1, nearest[y * width + x]! - radius + 0.5)));
    return [shade, shade, shade];
  });
}
