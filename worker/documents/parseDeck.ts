import { documentLimits, DocumentRejected } from './limits.ts';
import { attr, child, children, parseXml, relationships, relsPartOf, textOf, type XmlNode } from './ooxml.ts';
import type { Box, DeckParagraph, DeckPicture, DeckSlide, DeckTextBox, ParsedDeck } from './types.ts';
import { openZip, resolvePart, type ZipReader } from './zipReader.ts';

const presentationPart = 'ppt/presentation.xml';

// Picture formats a browser shows from a data: URI; others (EMF, WMF, TIFF) are left out of renders.
const imageTypes: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  bmp: 'image/bmp',
  webp: 'image/webp',
  svg: 'image/svg+xml',
};

function emu(value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

function boxOf(shapeProperties: XmlNode | undefined): Box {
  const xfrm = child(shapeProperties, 'a:xfrm');
  const off = child(xfrm, 'a:off');
  const ext = child(xfrm, 'a:ext');
  const [x, y, w, h] = [attr(off, 'x'), attr(off, 'y'), attr(ext, 'cx'), attr(ext, 'cy')].map(emu);
  return x === null || y === null || w === null || h === null ? null : { x: x!, y: y!, w: w!, h: h! };
}

function paragraphsOf(txBody: XmlNode | undefined): DeckParagraph[] {
  return children(txBody, 'a:p').map((p) => {
    const runs = [...children(p, 'a:r'), ...children(p, 'a:fld')];
    const text = runs.map((r) => textOf(child(r, 'a:t') ?? (r as XmlNode)['a:t'])).join('');
    const props = child(runs[0], 'a:rPr');
    const size = emu(attr(props, 'sz'));
    return { text, sizePt: size === null ? null : size / 100, bold: attr(props, 'b') === '1' };
  });
}

/** Text of a table (graphic frame), one paragraph per cell, so a render still shows what it says. */
function tableText(frame: XmlNode): DeckParagraph[] {
  const table = child(child(child(frame, 'a:graphic'), 'a:graphicData'), 'a:tbl');
  return children(table, 'a:tr').flatMap((row) =>
    children(row, 'a:tc').flatMap((cell) => paragraphsOf(child(cell, 'a:txBody'))),
  );
}

/** Shapes of a shape tree, groups flattened (their child offsets are taken as slide positions). */
function collectShapes(
  tree: XmlNode | undefined,
  rels: ReturnType<typeof relationships>,
  slidePart: string,
  out: DeckSlide,
): void {
  for (const shape of children(tree, 'p:sp')) {
    const paragraphs = paragraphsOf(child(shape, 'p:txBody'));
    if (paragraphs.some((p) => p.text.trim() !== '')) {
      out.texts.push({ box: boxOf(child(shape, 'p:spPr')), paragraphs });
    }
  }
  for (const frame of children(tree, 'p:graphicFrame')) {
    const paragraphs = tableText(frame);
    if (paragraphs.length > 0) out.texts.push({ box: null, paragraphs } satisfies DeckTextBox);
  }
  for (const pic of children(tree, 'p:pic')) {
    const embed = attr(child(child(pic, 'p:blipFill'), 'a:blip'), 'r:embed');
    const rel = embed ? rels.get(embed) : undefined;
    if (!rel || rel.external) continue;
    const part = resolvePart(slidePart, rel.target);
    const contentType = imageTypes[part.slice(part.lastIndexOf('.') + 1).toLowerCase()];
    if (contentType) {
      out.pictures.push({ box: boxOf(child(pic, 'p:spPr')), part, contentType } satisfies DeckPicture);
    }
  }
  for (const group of children(tree, 'p:grpSp')) collectShapes(group, rels, slidePart, out);
}

async function readSlide(zip: ZipReader, slidePart: string): Promise<DeckSlide> {
  const xml = parseXml(await zip.text(slidePart));
  const rels = relationships(
    zip.has(relsPartOf(slidePart)) ? await zip.text(relsPartOf(slidePart)) : undefined,
  );
  const slide: DeckSlide = { texts: [], pictures: [] };
  collectShapes(child(child(child(xml, 'p:sld'), 'p:cSld'), 'p:spTree'), rels, slidePart, slide);
  for (const picture of slide.pictures) {
    if (!zip.has(picture.part)) throw new DocumentRejected(`missing picture ${picture.part}`);
  }
  return slide;
}

/**
 * A deck's slides in presentation order (presentation.xml's slide list, not part names), with
 * their text runs and pictures.
 * @throws DocumentRejected when the bytes are not a pptx, have no slides or too many, or exceed the budget.
 */
export async function parseDeck(data: Buffer): Promise<ParsedDeck> {
  const zip = openZip(data);
  if (!zip.has(presentationPart)) throw new DocumentRejected('no presentation part');
  const presentation = child(parseXml(await zip.text(presentationPart)), 'p:presentation');
  const rels = relationships(await zip.text(relsPartOf(presentationPart)).catch(() => undefined));
  const ids = children(child(presentation, 'p:sldIdLst'), 'p:sldId');
  if (ids.length === 0) throw new DocumentRejected('the deck has no slides');
  if (ids.length > documentLimits.maxSlides) throw new DocumentRejected('too many slides');
  const size = child(presentation, 'p:sldSz');
  // PowerPoint's default 4:3 slide when the size is missing.
  const width = emu(attr(size, 'cx')) ?? 9_144_000;
  const height = emu(attr(size, 'cy')) ?? 6_858_000;
  if (width <= 0 || height <= 0) throw new DocumentRejected('invalid slide size');
  const slides: DeckSlide[] = [];
  for (const id of ids) {
    const rel = rels.get(attr(id, 'r:id') ?? '');
    if (!rel || rel.external) throw new DocumentRejected('a slide is not in the package');
    slides.push(await readSlide(zip, resolvePart(presentationPart, rel.target)));
  }
  return { kind: 'deck', width, height, slides };
}
