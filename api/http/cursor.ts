import { createHmac, timingSafeEqual } from 'node:crypto';

import { findServerSecret } from '../../shared/db/queries/serverSecrets.ts';
import type { Db } from '../../shared/db/sql.ts';
import { AppError } from '../../shared/errors/appError.ts';

/** Which endpoint issued a cursor: a page cursor is not a stream cursor and vice versa (spec: "issued by the endpoint"). */
export type CursorPurpose = 'messages' | 'stream';

const purposeByte: Record<CursorPurpose, number> = { messages: 1, stream: 2 };
const version = 1;
// version (1) + purpose (1) + message number (8), then a 128-bit MAC: 26 bytes, 35 base64url characters.
const bodyBytes = 10;
const macBytes = 16;
const encodedLength = Math.ceil(((bodyBytes + macBytes) * 4) / 3);

export type CursorKey = { readonly key: Buffer };

/**
 * The cursor signing key, derived from the `cursor` row of server_secrets so that every api instance
 * on the database accepts every other's cursors.
 * @throws the database error when the secret cannot be read.
 */
export async function cursorKey(db: Db): Promise<CursorKey> {
  const secret = await findServerSecret(db, 'cursor');
  // A purpose-specific key, so the stored secret can serve other purposes without cross-use.
  return { key: createHmac('sha256', secret).update('svc task message cursor v1').digest() };
}

/** The api process's cursor key, read once (a failed read is tried again on the next call). */
export class CursorKeys {
  private key: Promise<CursorKey> | undefined;
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  get(): Promise<CursorKey> {
    if (!this.key) {
      const key = cursorKey(this.db);
      key.catch(() => {
        if (this.key === key) this.key = undefined;
      });
      this.key = key;
    }
    return this.key;
  }
}

function mac(key: CursorKey, body: Buffer, taskId: string): Buffer {
  return createHmac('sha256', key.key).update(body).update(taskId, 'utf8').digest().subarray(0, macBytes);
}

/** An opaque cursor meaning "after message number `seq` of task `taskId`", bound to its endpoint. */
export function encodeCursor(
  key: CursorKey,
  cursor: { purpose: CursorPurpose; taskId: string; seq: number },
): string {
  const body = Buffer.alloc(bodyBytes);
  body.writeUInt8(version, 0);
  body.writeUInt8(purposeByte[cursor.purpose], 1);
  body.writeBigUInt64BE(BigInt(cursor.seq), 2);
  return Buffer.concat([body, mac(key, body, cursor.taskId)]).toString('base64url');
}

function invalidCursor(): AppError {
  return new AppError(
    'invalid_cursor',
    'The cursor was not issued by this endpoint for this task; pass a cursor verbatim.',
  );
}

/**
 * The message number a cursor stands for.
 * @throws AppError invalid_cursor for anything this endpoint did not issue for this task: garbage,
 *   a tampered or truncated cursor, one from another task or from the other endpoint.
 */
export function decodeCursor(key: CursorKey, raw: string, purpose: CursorPurpose, taskId: string): number {
  if (raw.length !== encodedLength || !/^[A-Za-z0-9_-]+$/.test(raw)) throw invalidCursor();
  const bytes = Buffer.from(raw, 'base64url');
  // Node decodes leniently; only the canonical spelling of the bytes is a cursor we issued.
  if (bytes.length !== bodyBytes + macBytes || bytes.toString('base64url') !== raw) throw invalidCursor();
  const body = bytes.subarray(0, bodyBytes);
  if (!timingSafeEqual(bytes.subarray(bodyBytes), mac(key, body, taskId))) throw invalidCursor();
  if (body.readUInt8(0) !== version || body.readUInt8(1) !== purposeByte[purpose]) throw invalidCursor();
  const seq = Number(body.readBigUInt64BE(2));
  if (!Number.isSafeInteger(seq)) throw invalidCursor();
  return seq;
}
