import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { Request, Response } from 'express';

import type { DatabasePool } from '../../shared/db/sql.ts';
import { AppError } from '../../shared/errors/appError.ts';
import type { ObjectStore } from '../../shared/storage/objectStore.ts';
import { ifRangeAllows, noneMatchHits, parseRange } from './byteRange.ts';
import { contentDisposition } from './contentDisposition.ts';

/** Where a workspace's stored bytes are found: their row, then their object. */
export type StoredBytes = { pool: DatabasePool; objectStore: ObjectStore };

/** Sends the bytes of a workspace's stored thing (a file, a video) found by its id. */
export type WorkspaceDownload = (
  req: Request,
  res: Response,
  stored: StoredBytes,
  workspaceId: string,
  id: string,
) => Promise<void>;

export type StoredObject = {
  key: string;
  sizeBytes: number;
  contentType: string;
  /** A strong entity tag, quoted (`"…"`): stored objects never change under one key here. */
  etag: string;
  filename?: string;
  disposition?: 'inline' | 'attachment';
  lastModified?: Date;
};

// Headers that describe the bytes; an error answered instead of them must not carry them.
const representationHeaders = [
  'Accept-Ranges',
  'Content-Range',
  'Content-Disposition',
  'ETag',
  'Last-Modified',
  'Cache-Control',
  'Content-Length',
  'Content-Type',
];

/**
 * Answers a GET (or HEAD) for a stored object: 200 with the whole object, 206 for a single byte
 * range (Range: bytes=a-b, a-, -n), 416 with `Content-Range: bytes *\/size` for a range past its end,
 * 304 when If-None-Match names its ETag. Bytes are streamed from object storage, never buffered; a
 * client that disconnects stops the read from storage (pipeline destroys the source).
 * @throws AppError range_not_satisfiable; the store's error (before the body: answerable; mid-body:
 *   the response is already cut off).
 */
export async function sendStoredObject(
  req: Request,
  res: Response,
  store: Pick<ObjectStore, 'get'>,
  object: StoredObject,
): Promise<void> {
  const { sizeBytes: size, etag } = object;
  // Stored bytes are uploads and renders: a browser must neither guess their type nor run them as a page.
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', 'sandbox');
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('ETag', etag);
  if (object.lastModified) res.setHeader('Last-Modified', object.lastModified.toUTCString());
  // The bytes are behind a credential: shared caches must not keep them.
  res.setHeader('Cache-Control', 'private, no-cache');
  if (noneMatchHits(req.get('If-None-Match'), etag)) {
    res.status(304).end();
    return;
  }
  const wanted = ifRangeAllows(req.get('If-Range'), etag)
    ? parseRange(req.get('Range'), size)
    : { kind: 'whole' as const };
  if (wanted.kind === 'unsatisfiable') {
    throw new AppError('range_not_satisfiable', `The range is outside the ${size} bytes of the file.`, {
      headers: { 'Content-Range': `bytes */${size}` },
    });
  }
  const range = wanted.kind === 'range' ? { start: wanted.start, end: wanted.end } : undefined;
  res.status(range ? 206 : 200);
  res.setHeader('Content-Type', object.contentType);
  res.setHeader('Content-Length', String(range ? range.end - range.start + 1 : size));
  if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  if (object.filename) {
    res.setHeader('Content-Disposition', contentDisposition(object.disposition ?? 'inline', object.filename));
  }
  if (req.method === 'HEAD' || size === 0) {
    res.end();
    return;
  }
  let body: Readable;
  try {
    body = await store.get(object.key, range);
  } catch (error) {
    for (const name of representationHeaders) res.removeHeader(name);
    res.status(200);
    throw error;
  }
  try {
    await pipeline(body, res);
  } catch (error) {
    // Either way pipeline has destroyed both ends, so nothing more can be answered. A client that
    // left is no failure; storage failing mid-body is, and goes on to the error handler's log.
    if ((error as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    throw error;
  }
}
