import { types } from 'node:util';
import { Worker } from 'node:worker_threads';

import type { NativeKind } from '../../shared/files/nativeDocuments.ts';
import { ByteBudget } from '../byteBudget.ts';
import { documentLimits, DocumentRejected } from './limits.ts';
import type { ParseReply, ParseRequest } from './parseThread.ts';
import type { ParsedDocument } from './types.ts';
import { readZipDirectory } from './zipDirectory.ts';

// Node runs the thread's TypeScript itself (type stripping), under jest as in production.
const threadFile = new URL('./parseThread.ts', import.meta.url);

// Parse threads of this process at once, counted one unit a thread: each may hold its heap cap.
const threads = new ByteBudget(documentLimits.maxParseThreads);

export type ParseBounds = { timeoutMs: number; heapMb: number };

const defaultBounds: ParseBounds = {
  timeoutMs: documentLimits.parseTimeoutMs,
  heapMb: documentLimits.parseHeapMb,
};

/** The declared inflated bytes a kind's zip may hold; undefined for the kinds that are text. */
function zipBoundOf(kind: NativeKind, filename: string): number | undefined {
  const extension = filename.slice(filename.lastIndexOf('.') + 1).toLowerCase();
  if (kind === 'deck') return documentLimits.maxUnzippedBytes;
  if (kind === 'sheet' && extension === 'xlsx') return documentLimits.maxWorkbookBytes;
  return undefined;
}

/** The bytes as an ArrayBuffer the thread can own: the Buffer's own when it spans all of it. */
function transferable(data: Buffer): ArrayBuffer {
  const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
  // A small Buffer shares Node's pool with others: it is copied, never handed over.
  return whole && types.isArrayBuffer(data.buffer) ? data.buffer : new Uint8Array(data).buffer;
}

function isOutOfMemory(error: unknown): boolean {
  return (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
}

/**
 * Runs one parse in a thread of its own and settles once the thread has exited: with its answer,
 * or a DocumentRejected when it passes its heap cap or deadline (the thread is terminated, its
 * work stops), or `signal`'s reason when the job is aborted.
 */
function parseInThread(
  request: ParseRequest,
  bounds: ParseBounds,
  signal: AbortSignal,
): Promise<ParsedDocument> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(threadFile, {
      workerData: request,
      transferList: [request.data],
      resourceLimits: { maxOldGenerationSizeMb: bounds.heapMb, maxYoungGenerationSizeMb: 16 },
    });
    let ended = false;
    const end = (settle: () => void) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      void worker.terminate().then(settle, settle);
    };
    const timer = setTimeout(
      () => end(() => reject(new DocumentRejected(`parsing took over ${bounds.timeoutMs} ms`))),
      bounds.timeoutMs,
    );
    const onAbort = () => end(() => reject(signal.reason as Error));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (reply: ParseReply) =>
      end(() => {
        if (reply.ok) resolve(JSON.parse(reply.json) as ParsedDocument);
        else reject(reply.rejected ? new DocumentRejected(reply.message) : new Error(reply.message));
      }),
    );
    worker.once('error', (error) =>
      end(() =>
        reject(
          isOutOfMemory(error)
            ? new DocumentRejected(`parsing passed its ${bounds.heapMb} MiB heap`)
            : new Error(`the parse thread failed: ${error.message}`, { cause: error }),
        ),
      ),
    );
    worker.once('exit', (code) =>
      end(() => reject(new Error(`the parse thread exited (code ${code}) without an answer`))),
    );
  });
}

/**
 * Parses a native document in a thread of its own, capped at `bounds.heapMb` of heap and ended
 * after `bounds.timeoutMs` (or when `signal` aborts), so neither a document's memory nor its time
 * lands on the worker process and its other jobs. A zip (xlsx, pptx) is first judged by its
 * central directory here, before a thread starts or a byte is inflated.
 *
 * Takes the bytes: when `data` spans its whole memory, that memory is handed to the thread (not
 * copied) and `data` is empty afterwards.
 * @throws DocumentRejected when the bytes are not a document of that kind, exceed a bound, or time
 *   out; Error when the thread fails otherwise; the signal's reason when aborted.
 */
export async function parseDocument(
  kind: NativeKind,
  filename: string,
  data: Buffer,
  signal: AbortSignal,
  bounds: ParseBounds = defaultBounds,
): Promise<ParsedDocument> {
  if (data.length > documentLimits.maxInputBytes) throw new DocumentRejected('too large to parse');
  const zipBound = zipBoundOf(kind, filename);
  if (zipBound !== undefined) {
    readZipDirectory(data, { maxEntries: documentLimits.maxZipEntries, maxDeclaredBytes: zipBound });
  }
  const release = await threads.take(1);
  try {
    signal.throwIfAborted();
    return await parseInThread({ kind, filename, data: transferable(data) }, bounds, signal);
  } finally {
    release();
  }
}
