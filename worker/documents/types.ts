/** The parsed forms stored as JSON next to a native document (documents/<fileId>/parsed.json). */

export type ParsedPage = { kind: 'page'; title: string | null };

export type SheetCell = string | number | boolean | null;
export type ParsedSheet = { kind: 'sheet'; sheets: { name: string; rows: SheetCell[][] }[] };

/** A position on the slide in EMU (914,400 per inch); null where the shape inherits it from its layout. */
export type Box = { x: number; y: number; w: number; h: number } | null;

export type DeckParagraph = { text: string; sizePt: number | null; bold: boolean };
export type DeckTextBox = { box: Box; paragraphs: DeckParagraph[] };
/** A picture by its part in the pptx (read again when rendering, under the same budget). */
export type DeckPicture = { box: Box; part: string; contentType: string };
export type DeckSlide = { texts: DeckTextBox[]; pictures: DeckPicture[] };
/** Slide size in EMU and the slides in presentation order. */
export type ParsedDeck = { kind: 'deck'; width: number; height: number; slides: DeckSlide[] };

export type ParsedDocument = ParsedPage | ParsedSheet | ParsedDeck;
