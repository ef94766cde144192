import type { Box, DeckSlide, DeckTextBox, ParsedDeck } from '../documents/types.ts';

/** CSS pixels per EMU (914,400 EMU per inch, 96 px per inch). */
const pxPerEmu = 96 / 914_400;

const px = (emu: number) => `${(emu * pxPerEmu).toFixed(2)}px`;

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

function placed(box: Box): string {
  return box ? `left:${px(box.x)};top:${px(box.y)};width:${px(box.w)};height:${px(box.h)}` : '';
}

function textBox(text: DeckTextBox): string {
  const paragraphs = text.paragraphs
    .map((p) => {
      const style = [p.sizePt ? `font-size:${p.sizePt}pt` : '', p.bold ? 'font-weight:bold' : '']
        .filter(Boolean)
        .join(';');
      return `<p style="${style}">${escapeHtml(p.text) || '&nbsp;'}</p>`;
    })
    .join('');
  return text.box
    ? `<div class="box" style="${placed(text.box)}">${paragraphs}</div>`
    : `<div class="flowing">${paragraphs}</div>`;
}

function slideHtml(slide: DeckSlide, images: ReadonlyMap<string, string>): string {
  const pictures = slide.pictures
    .map((pic) => {
      const src = images.get(pic.part);
      return src && pic.box ? `<img alt="" src="${escapeHtml(src)}" style="${placed(pic.box)}">` : '';
    })
    .join('');
  const placedTexts = slide.texts
    .filter((t) => t.box)
    .map(textBox)
    .join('');
  // Text whose position comes from a layout we do not read flows from the top instead of vanishing.
  const flowing = slide.texts
    .filter((t) => !t.box)
    .map(textBox)
    .join('');
  return `<section class="slide">${pictures}${placedTexts}${flowing ? `<div class="flow">${flowing}</div>` : ''}</section>`;
}

/**
 * A deck as one HTML document, one fixed-size section per slide, so printing gives one PDF page
 * per slide at the slide's size. All text is escaped and pictures are data: URIs (the render
 * context has no network); the CSP repeats that nothing else may load.
 */
export function deckHtml(deck: ParsedDeck, images: ReadonlyMap<string, string>): string {
  const width = px(deck.width);
  const height = px(deck.height);
  return `<!doctype html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<style>
@page { size: ${width} ${height}; margin: 0; }
html, body { margin: 0; padding: 0; }
body { font-family: 'DejaVu Sans', 'Noto Sans Devanagari', sans-serif; font-size: 18pt; color: #111; }
.slide { position: relative; width: ${width}; height: ${height}; overflow: hidden; background: #fff; break-after: page; }
.slide:last-child { break-after: auto; }
.box { position: absolute; overflow: hidden; }
.flow { position: absolute; inset: 4%; }
img { position: absolute; object-fit: contain; }
p { margin: 0 0 0.2em; white-space: pre-wrap; overflow-wrap: anywhere; }
</style></head>
<body>${deck.slides.map((s) => slideHtml(s, images)).join('\n')}</body></html>`;
}

/** The slide size as page.pdf takes it. */
export function pageSize(deck: ParsedDeck): { width: string; height: string } {
  return { width: px(deck.width), height: px(deck.height) };
}
