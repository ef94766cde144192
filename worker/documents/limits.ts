/**
 * Bounds on parsing one document: an upload may be up to 100 MiB, and a zip can claim or hide far
 * more than it holds (a zip bomb), so each bound is checked on bytes actually produced.
 */
export const documentLimits = {
  /** Bytes of an upload the parser reads at all; larger native documents stay kind `file`. */
  maxInputBytes: 50 * 1024 * 1024,
  /** Decompressed bytes read out of one zip (xlsx, pptx), all entries together. */
  maxUnzippedBytes: 128 * 1024 * 1024,
  /** Entries in one zip (an OOXML document has dozens; millions is an attack on the directory). */
  maxZipEntries: 10_000,
  maxSheetRows: 100_000,
  maxSheetCells: 1_000_000,
  maxSlides: 300,
  /**
   * Picture bytes a deck render inlines (as data: URIs, a third larger); pictures past it are left
   * out of the PDF rather than handing the browser a document of hundreds of megabytes.
   */
  maxPictureBytes: 32 * 1024 * 1024,
  /** Wall time of one parse (the bounds above keep it far below this on sane input). */
  parseTimeoutMs: 30_000,
} as const;

/** The document is not what its name says, or exceeds a bound: it stays kind `file`. */
export class DocumentRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DocumentRejected';
  }
}

/**
 * A text document's bytes as text: UTF-8, and no NUL (binary content).
 * @throws DocumentRejected otherwise.
 */
export function documentText(data: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    throw new DocumentRejected('not UTF-8 text');
  }
  if (text.includes('\u0000')) throw new DocumentRejected('binary content');
  return text;
}
