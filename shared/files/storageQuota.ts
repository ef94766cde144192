import type { DatabasePool } from 'slonik';

import {
  deleteStorageReservation,
  insertStorageReservation,
  lockStorageRoom,
} from '../db/queries/storageReservations.ts';
import { addStorageUsed } from '../db/queries/workspaces.ts';
import type { Db } from '../db/sql.ts';
import { AppError } from '../errors/appError.ts';
import { newId } from '../primitives/ids.ts';

/** Bytes held against a workspace's storage quota for one upload. */
export type StorageHold = { id: string; workspaceId: string; bytes: number };

export function quotaExceeded(needed: number, free: number): AppError {
  return new AppError(
    'storage_quota_exceeded',
    `The workspace storage quota has ${Math.max(free, 0)} bytes free; this upload needs ${needed}.`,
  );
}

/**
 * Holds up to `bytes` of the workspace's quota for `ttlSeconds`, atomically with every other upload
 * of the workspace. With `partial`, a quota with less room left grants what it has (a streamed upload
 * whose exact size is unknown: exceeding the grant then means the quota is full); without it, all or
 * nothing.
 * @throws AppError storage_quota_exceeded when nothing (or, without `partial`, not all) can be held.
 */
export function reserveStorage(
  pool: DatabasePool,
  request: { workspaceId: string; bytes: number; ttlSeconds: number; partial?: boolean; id?: string },
): Promise<StorageHold> {
  return pool.transaction(async (tx) => {
    const room = await lockStorageRoom(tx, request.workspaceId);
    const free = room.quota - room.used - room.reserved;
    const granted = request.partial ? Math.min(request.bytes, Math.max(free, 0)) : request.bytes;
    if (granted > free || (granted === 0 && request.bytes > 0)) throw quotaExceeded(request.bytes, free);
    const hold = { id: request.id ?? newId('srv'), workspaceId: request.workspaceId, bytes: granted };
    await insertStorageReservation(tx, { ...hold, ttlSeconds: request.ttlSeconds });
    return hold;
  });
}

/**
 * Turns a hold into stored bytes, in the transaction that records the file. A hold that expired
 * while its bytes were arriving no longer counts, so the quota is checked again against everything
 * else stored or held.
 * @throws AppError storage_quota_exceeded when the file no longer fits.
 */
export async function commitStorage(tx: Db, hold: StorageHold, sizeBytes: number): Promise<void> {
  const room = await lockStorageRoom(tx, hold.workspaceId, hold.id);
  const free = room.quota - room.used - room.reserved;
  if (sizeBytes > free) throw quotaExceeded(sizeBytes, free);
  await deleteStorageReservation(tx, hold.id);
  await addStorageUsed(tx, hold.workspaceId, sizeBytes);
}

export async function releaseStorage(db: Db, hold: StorageHold): Promise<void> {
  await deleteStorageReservation(db, hold.id);
}
