/**
 * Bounds on parsing one document: an upload may be up to 100 MiB, and a zip can claim or hide far
 * more than it holds (a zip bomb). A zip's entry count and declared sizes are checked from its
 * central directory before anything is inflated, and every entry is held to its declared size
 * while it inflates; the parse itself runs in a thread of its own under a heap cap and a deadline
 * (parseDocument.ts).
 */
export const documentLimits = {
  /** Bytes of an upload the parser reads at all; larger native documents stay kind `file`. */
  maxInputBytes: 50 * 1024 * 1024,
  /**
   * Declared inflated bytes of one zip (all entries together), and bytes a parse reads out of it.
   * A deck's pictures count here, though parsing reads only its XML parts.
   */
  maxUnzippedBytes: 128 * 1024 * 1024,
  /**
   * Declared inflated bytes of one xlsx: exceljs inflates every part into memory and holds the
   * sheets as objects of about 0.4 KiB a cell, so a larger workbook could not be parsed within
   * parseHeapMb anyway (measured: ~300,000 cells fill 128 MiB).
   */
  maxWorkbookBytes: 32 * 1024 * 1024,
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
  /** Wall time of one parse; its thread is terminated when it passes. */
  parseTimeoutMs: 30_000,
  /**
   * V8 heap (old generation) of a parse thread: past it the thread is ended, not the process.
   * Inflated bytes held in buffers are outside this heap and bounded by the sizes above.
   */
  parseHeapMb: 128,
  /** Parse threads a worker process runs at once (more parses wait for one to end). */
  maxParseThreads: 2,
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
