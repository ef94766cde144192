import type { Writable } from 'node:stream';

import type { Request, Response } from 'express';
import multer from 'multer';

import { AppError, type Issue } from '../../shared/errors/appError.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import type { ObjectStore } from '../../shared/storage/objectStore.ts';
import { ClientGoneError } from '../http/clientGone.ts';
import { IdleTimer } from './idleTimer.ts';
import { streamToObjectStore } from './streamToObjectStore.ts';
import type { UploadGauge } from './uploadGauge.ts';

/**
 * Something held for an upload before its bytes are accepted (a storage quota, say). The module
 * calls `release` exactly once on every path on which nothing ends up stored: the client left or
 * stalled, a limit was hit, storage failed, the body was malformed. Once a file is stored the
 * reservation is the caller's, to commit with the row that uses the bytes or give back via
 * `ReceivedUpload.discard`.
 */
export type UploadReservation = {
  release(): Promise<void>;
  /** A file larger than this is refused as too large, like one over the spec's limit. */
  maxBytes?: number;
};

/** What one upload endpoint accepts: one file field streamed to `objectKey`, and some text fields. */
export type UploadSpec = {
  fileField: string;
  maxFileBytes: number;
  textFields: readonly string[];
  /** Is this file acceptable? Otherwise it is read and dropped, and `unsupportedType` is set. */
  acceptsFile(mimeType: string, filename: string): boolean;
  /** Do the file's first bytes show what it claims? Otherwise nothing is stored and `unsupportedType` is set. */
  acceptsContent?(head: Buffer, mimeType: string): Promise<boolean>;
  objectKey: string;
  /** Taken before the first byte of the body is read. */
  reserve?: (req: Request) => Promise<UploadReservation>;
};

export type UploadDeps = {
  store: ObjectStore;
  gauge: UploadGauge;
  /** A client that sends nothing for this long is answered and disconnected. */
  idleTimeoutMs: number;
  logger: Logger;
};

export type StoredUpload = {
  key: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  /** Of the stored bytes, hex. */
  sha256: string;
};

/**
 * A body read to its end. Problems a caller ranks against its own checks (DESIGN.md check order)
 * are collected rather than thrown: `issues`, `unsupportedType` and `tooLarge` (then nothing is
 * stored and the reservation has been released).
 */
export type ReceivedUpload = {
  /** Set when the file was stored; the caller owns the object (and the reservation) from here on. */
  stored?: StoredUpload;
  fields: Record<string, string>;
  issues: Issue[];
  unsupportedType?: string;
  /** The type was refused for the file's content (its first bytes), not for the declared type. */
  contentRefused: boolean;
  tooLarge: boolean;
  /**
   * Removes the stored object and releases the reservation, for a caller that refuses the upload;
   * with `keepObject`, releases the reservation only (whether a row now owns the object is unknown).
   */
  discard(options?: { keepObject?: boolean }): Promise<void>;
};

const maxFieldBytes = 64 * 1024;

/** Multer's errors (its codes outrun @types/multer's union), as the issue each one is to the caller. */
function limitIssue(error: multer.MulterError, spec: UploadSpec): Issue {
  const field = error.field ?? 'body';
  switch (error.code as string) {
    case 'LIMIT_FIELD_VALUE':
      return { path: field, message: 'is too long' };
    case 'LIMIT_FILE_COUNT':
      return { path: spec.fileField, message: 'only one file is accepted' };
    case 'LIMIT_FIELD_COUNT':
      return { path: 'body', message: 'too many fields' };
    case 'LIMIT_PART_COUNT':
      return { path: 'body', message: 'too many parts' };
    case 'LIMIT_FIELD_KEY':
      return { path: 'body', message: 'a field name is too long' };
    case 'LIMIT_FIELD_NESTING':
    case 'LIMIT_FIELD_ARRAY_INDEX':
    case 'INVALID_FIELD_NAME':
      return { path: field, message: 'unknown field' };
    default:
      return { path: field, message: error.message };
  }
}

function malformed(error: unknown): AppError {
  const message = (error as Error).message;
  return new AppError('invalid_request_body', 'The multipart body is malformed.', {
    issues: [{ path: /boundary/i.test(message) ? 'content-type' : 'body', message }],
    cause: error,
  });
}

/**
 * One upload being received: multer parses the body and hands the file to a storage engine that
 * streams it to object storage; around it, what multer does not do for us. It never times a client
 * out; on a client abort it answers before its storage engine has finished; and after an error it
 * waits for the body to drain, which a stalled client never lets happen. So the end of an upload is
 * decided here, once, from the first of: multer's verdict, the client leaving, the idle timer.
 */
class UploadReceiver {
  readonly #req: Request;
  readonly #res: Response;
  readonly #spec: UploadSpec;
  readonly #deps: UploadDeps;
  readonly #reservation: UploadReservation | undefined;
  readonly #abort = new AbortController();
  readonly #pending = new Set<Promise<unknown>>();
  readonly #issues: Issue[] = [];
  readonly #idle: IdleTimer;
  readonly #endReceiving: () => void;
  #stored: StoredUpload | undefined;
  #unsupportedType: string | undefined;
  #contentRefused = false;
  #tooLarge = false;
  #storeError: unknown;
  #clientGone = false;
  #parser: Writable | undefined;
  #released = false;
  #ending = false;
  #settle: { resolve(value: ReceivedUpload): void; reject(error: unknown): void } | undefined;

  constructor(
    req: Request,
    res: Response,
    spec: UploadSpec,
    deps: UploadDeps,
    reservation?: UploadReservation,
  ) {
    this.#req = req;
    this.#res = res;
    this.#spec = spec;
    this.#deps = deps;
    this.#reservation = reservation;
    this.#endReceiving = deps.gauge.begin();
    this.#idle = new IdleTimer(deps.idleTimeoutMs, () => this.#fail(this.#stalled()));
  }

  run(): Promise<ReceivedUpload> {
    const promise = new Promise<ReceivedUpload>((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
    const req = this.#req;
    // Registered before multer's own listeners, so a disconnect is known as such by the time
    // multer reports it as an error. They stay for the life of the request: after the upload has
    // ended they do nothing, but an 'error' without a listener would take the process down.
    const gone = () => {
      this.#clientGone = true;
      this.#fail(new ClientGoneError());
    };
    req.on('error', gone);
    req.on('close', () => {
      if (!req.readableEnded) gone();
    });
    this.#res.on('close', () => {
      if (!this.#res.writableFinished) gone();
    });
    // Gone already (while the reservation was being taken): its events have fired.
    if (req.destroyed && !req.readableEnded) gone();
    const middleware = multer(this.#multerOptions()).any();
    middleware(req, this.#res, (error?: unknown) => {
      if (error === undefined) {
        void this.#succeed();
        return;
      }
      // A storage failure is the cause of whatever multer saw next (it reads a failed file as aborted).
      const limit = error instanceof multer.MulterError ? this.#limit(error) : undefined;
      this.#fail(this.#storeError ?? limit ?? malformed(error));
    });
    return promise;
  }

  #multerOptions(): multer.Options & {
    streamHandler(req: Request, parser: Writable): void;
    defParamCharset: string;
  } {
    const spec = this.#spec;
    return {
      // Browsers and curl send filenames as raw UTF-8; busboy's default would read them as Latin-1.
      defParamCharset: 'utf8',
      storage: {
        _handleFile: (_req, file, cb) => this.#handleFile(file, cb),
        _removeFile: (_req, _file, cb) => this.#removeFile(cb),
      },
      limits: {
        files: 1,
        fields: spec.textFields.length + 8,
        parts: spec.textFields.length + 10,
        fieldSize: maxFieldBytes,
        fieldNameSize: 200,
        // Names are flat: `a[b]` is an unknown field, not an object.
        fieldNestingDepth: 0,
      },
      fileFilter: (_req, file, cb) => {
        if (file.fieldname !== spec.fileField) {
          this.#issues.push({ path: file.fieldname, message: 'unexpected file field' });
          return cb(null, false);
        }
        if (!spec.acceptsFile(file.mimetype, file.originalname)) {
          this.#unsupportedType = file.mimetype;
          return cb(null, false);
        }
        cb(null, true);
      },
      // Multer's hook for feeding the body to busboy: the place to see every byte arrive.
      streamHandler: (req, parser) => {
        this.#parser = parser;
        req.on('data', () => this.#idle.touch());
        req.pipe(parser);
      },
    };
  }

  #handleFile(file: Express.Multer.File, cb: (error?: unknown, info?: Partial<Express.Multer.File>) => void) {
    const { store, gauge } = this.#deps;
    const key = this.#spec.objectKey;
    const work = streamToObjectStore(store, key, file.stream, {
      contentType: file.mimetype,
      maxBytes: Math.min(this.#spec.maxFileBytes, this.#reservation?.maxBytes ?? Infinity),
      signal: this.#abort.signal,
      gauge,
      holdIdle: () => this.#idle.hold(),
      ...(this.#spec.acceptsContent
        ? { acceptsContent: (head: Buffer) => this.#spec.acceptsContent!(head, file.mimetype) }
        : {}),
    }).then(
      (result) => {
        if (result.refused) {
          this.#unsupportedType = file.mimetype;
          this.#contentRefused = true;
        } else if (result.stored) {
          this.#stored = {
            key,
            filename: file.originalname,
            mimeType: file.mimetype,
            sizeBytes: result.sizeBytes,
            sha256: result.sha256,
          };
        } else {
          this.#tooLarge = true;
        }
        cb(null, { size: result.sizeBytes });
      },
      (error: unknown) => {
        // The stream's own failure (a disconnect, a malformed body) or our abort is reported by
        // whatever caused it; only a storage failure is this engine's to report.
        if (error !== file.stream.errored && !this.#abort.signal.aborted) this.#storeError ??= error;
        cb(error);
      },
    );
    this.#track(work);
  }

  #removeFile(cb: (error: Error | null) => void) {
    const key = this.#stored?.key;
    this.#stored = undefined;
    if (key === undefined) return cb(null);
    this.#track(
      this.#deps.store.remove(key).then(
        () => cb(null),
        (error: Error) => cb(error),
      ),
    );
  }

  #track(work: Promise<unknown>) {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  async #drainPending() {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  #limit(error: multer.MulterError): AppError {
    return new AppError('invalid_request_body', 'The multipart body exceeds a limit of this endpoint.', {
      issues: [limitIssue(error, this.#spec)],
      cause: error,
    });
  }

  #stalled(): AppError {
    const seconds = this.#deps.idleTimeoutMs / 1000;
    return new AppError(
      'invalid_request_body',
      `No part of the request body arrived for ${seconds} s; the upload was abandoned.`,
      {
        issues: [{ path: 'body', message: `incomplete: nothing received for ${seconds} s` }],
        // Whatever the client sends next can no longer be part of a request: it must reconnect.
        headers: { Connection: 'close' },
      },
    );
  }

  async #release() {
    if (this.#released || !this.#reservation) return;
    this.#released = true;
    await this.#reservation.release().catch((error: unknown) => {
      this.#deps.logger.error(
        { err: error, requestId: this.#req.requestId },
        'upload reservation release failed',
      );
    });
  }

  /** Ends the upload as failed: storage cleaned up, memory and reservation released, then rejects. */
  #fail(reason: unknown) {
    if (this.#ending) return;
    this.#ending = true;
    this.#idle.stop();
    this.#abort.abort(reason);
    if (this.#parser) {
      this.#req.unpipe(this.#parser);
      this.#parser.destroy(reason as Error);
    }
    void (async () => {
      await this.#drainPending();
      const stored = this.#stored;
      this.#stored = undefined;
      if (stored) await this.#deps.store.remove(stored.key).catch(() => {});
      await this.#release();
      this.#endReceiving();
      // Nobody is left to answer for a client that went away, whatever else went wrong.
      this.#settle!.reject(this.#clientGone ? new ClientGoneError() : (this.#storeError ?? reason));
    })();
  }

  async #succeed() {
    if (this.#ending) return;
    this.#ending = true;
    this.#idle.stop();
    await this.#drainPending();
    const { fields, issues } = this.#fields();
    const stored = this.#stored;
    // Nothing kept, nothing to hold: the reservation goes back now.
    if (!stored) await this.#release();
    this.#endReceiving();
    this.#settle!.resolve({
      ...(stored ? { stored } : {}),
      fields,
      issues: [...this.#issues, ...issues],
      ...(this.#unsupportedType !== undefined ? { unsupportedType: this.#unsupportedType } : {}),
      contentRefused: this.#contentRefused,
      tooLarge: this.#tooLarge,
      discard: async (options = {}) => {
        if (stored && !options.keepObject) await this.#deps.store.remove(stored.key).catch(() => {});
        await this.#release();
      },
    });
  }

  /** The text fields multer collected (into `req.body`), checked against the spec's list. */
  #fields(): { fields: Record<string, string>; issues: Issue[] } {
    const known = new Set(this.#spec.textFields);
    const fields: Record<string, string> = {};
    const issues: Issue[] = [];
    for (const [name, value] of Object.entries((this.#req.body ?? {}) as Record<string, unknown>)) {
      if (!known.has(name)) issues.push({ path: name, message: 'unknown field' });
      else if (typeof value !== 'string') issues.push({ path: name, message: 'must be sent once' });
      else fields[name] = value;
    }
    return { fields, issues };
  }
}

/**
 * Receives a multipart upload, streaming its one file to object storage (at most one 5 MiB part in
 * memory). Every way it can end leaves nothing behind: a client that disconnects or sends nothing
 * for `idleTimeoutMs`, a limit, a malformed body or a storage failure aborts the multipart upload,
 * removes a finished object, frees the buffered bytes and releases the reservation, all before this
 * function settles.
 * @throws AppError invalid_request_body when the body is not multipart/form-data, is malformed,
 *   exceeds a multipart limit, or stalls (then with `Connection: close`); ClientGoneError when the
 *   client went away; the storage client's error when storage failed; whatever `spec.reserve` throws.
 */
export async function receiveUpload(
  req: Request,
  res: Response,
  spec: UploadSpec,
  deps: UploadDeps,
): Promise<ReceivedUpload> {
  if (!req.is('multipart/form-data')) {
    throw new AppError('invalid_request_body', `Send the ${spec.fileField} as multipart/form-data.`, {
      issues: [{ path: 'content-type', message: 'must be multipart/form-data' }],
    });
  }
  const reservation = spec.reserve ? await spec.reserve(req) : undefined;
  return new UploadReceiver(req, res, spec, deps, reservation).run();
}
