import { currentDeckPdf, findFileDocument, recordDeckPdf } from '../../shared/db/queries/fileDocuments.ts';
import { findFileById } from '../../shared/db/queries/files.ts';
import { deckExportInput, documentObjectKey } from '../../shared/files/nativeDocuments.ts';
import type { WorkerContext } from '../context.ts';
import { documentLimits, DocumentRejected } from '../documents/limits.ts';
import type { ParsedDeck } from '../documents/types.ts';
import { openZip } from '../documents/zipReader.ts';
import { type JobDefinition, type JobOutcome, PermanentJobError } from '../jobEngine.ts';
import { deckHtml, pageSize } from '../render/deckHtml.ts';

type Prepared = {
  fileId: string;
  storageKey: string;
  parsedKey: string;
  revision: number;
  current: { key: string; pages: number } | undefined;
  /** Set by run when it rendered, for onSucceeded to record with the job's success. */
  rendered?: { key: string; pages: number };
};

/**
 * The deck's pictures as data: URIs, in slide order, up to maxPictureBytes inflated: the pictures
 * past the budget are left out (their slides still render their text).
 */
async function pictureSources(
  pptx: Buffer,
  deck: ParsedDeck,
  logger: WorkerContext['logger'],
): Promise<Map<string, string>> {
  const zip = openZip(pptx, { readBudget: documentLimits.maxPictureBytes });
  const sources = new Map<string, string>();
  for (const picture of deck.slides.flatMap((s) => s.pictures)) {
    if (sources.has(picture.part) || !zip.has(picture.part)) continue;
    try {
      const bytes = await zip.bytes(picture.part);
      sources.set(picture.part, `data:${picture.contentType};base64,${bytes.toString('base64')}`);
    } catch (error) {
      if (!(error instanceof DocumentRejected)) throw error;
      logger.warn(
        { part: picture.part },
        `deck pictures past the render budget are left out: ${error.message}`,
      );
      break;
    }
  }
  return sources;
}

/**
 * POST /files/{fileId}/render: prints a deck to PDF, one page per slide, with the process's headless
 * Chromium. Not billed. A deck whose PDF is current (rendered from its latest parse) is left as it
 * is: the job succeeds without rendering. The PDF is recorded in the transaction that ends the job,
 * so a deck has a current PDF iff a render job succeeded for its latest parse.
 */
export function deckExport(ctx: WorkerContext): JobDefinition<Prepared> {
  return {
    prepare: async (job) => {
      const { fileId } = deckExportInput.parse(job.input);
      const file = await findFileById(ctx.pool, fileId);
      const doc = await findFileDocument(ctx.pool, fileId);
      if (!file || file.workspace_id !== job.workspace_id || !doc || doc.kind !== 'deck') {
        throw new PermanentJobError('not_found', 'The deck no longer exists.');
      }
      return {
        fileId,
        storageKey: file.storage_key,
        parsedKey: doc.parsed_key,
        revision: doc.revision,
        current: currentDeckPdf(doc),
      };
    },
    run: async (_job, prepared, signal): Promise<JobOutcome> => {
      if (prepared.current) {
        return {
          result: { fileId: prepared.fileId, pages: prepared.current.pages },
          usage: {},
          costMinor: 0,
        };
      }
      const deck = JSON.parse(
        (await ctx.objectStore.getBuffer(prepared.parsedKey)).toString('utf8'),
      ) as ParsedDeck;
      const pptx = await ctx.objectStore.getBuffer(prepared.storageKey);
      const html = deckHtml(deck, await pictureSources(pptx, deck, ctx.logger));
      const pdf = await ctx.deckRenderer.pdf(html, pageSize(deck), signal);
      // Named by revision: a render of a newer parse never overwrites the PDF an export is streaming.
      const key = documentObjectKey(prepared.fileId, `deck-r${prepared.revision}.pdf`);
      await ctx.objectStore.put(key, pdf, pdf.length, 'application/pdf');
      prepared.rendered = { key, pages: deck.slides.length };
      return {
        result: { fileId: prepared.fileId, pages: deck.slides.length },
        usage: { pages: deck.slides.length },
        costMinor: 0,
      };
    },
    onSucceeded: async (tx, _job, prepared, outcome) => {
      if (prepared.rendered) {
        await recordDeckPdf(tx, {
          fileId: prepared.fileId,
          revision: prepared.revision,
          pdfKey: prepared.rendered.key,
          pages: prepared.rendered.pages,
        });
      }
      return outcome.result;
    },
  };
}
