import type { Task } from 'graphile-worker';

import { deleteExpiredStorageReservations } from '../../shared/db/queries/storageReservations.ts';
import { lockExpiredUploadSessions, markUploadAborted } from '../../shared/db/queries/uploadSessions.ts';
import { releaseStorage } from '../../shared/files/storageQuota.ts';
import type { WorkerContext } from '../context.ts';

const batch = 50;

/**
 * Every few minutes. Presigned upload sessions past their expiry are aborted in S3 (their parts
 * deleted, and an object a complete assembled but never recorded removed) and their quota holds
 * given back; holds that expired without being released (an upload whose process died or whose
 * release could not be written), already no longer counted, are deleted with a log line.
 * Returns how many sessions it ended.
 */
export async function sweepExpiredUploads(
  ctx: Pick<WorkerContext, 'pool' | 'objectStore' | 'logger'>,
): Promise<number> {
  let ended = 0;
  for (;;) {
    const count = await ctx.pool.transaction(async (tx) => {
      const sessions = await lockExpiredUploadSessions(tx, batch);
      for (const session of sessions) {
        await ctx.objectStore.abortMultipart(session.storage_key, session.s3_upload_id);
        await ctx.objectStore.remove(session.storage_key);
        await markUploadAborted(tx, session.id);
        await releaseStorage(tx, {
          id: session.id,
          workspaceId: session.workspace_id,
          bytes: session.size_bytes,
        });
      }
      return sessions.length;
    });
    ended += count;
    if (count < batch) break;
  }
  // What is left expired was never released: an upload whose process died, or whose release could
  // not be written (see shared/files/storageHoldLease.ts). It stopped counting when it expired.
  for (;;) {
    const holds = await deleteExpiredStorageReservations(ctx.pool, 1000);
    if (holds.length > 0) {
      ctx.logger.warn({ holds }, 'removed storage quota holds that expired without being released');
    }
    if (holds.length < 1000) break;
  }
  return ended;
}

export function uploadsSweep(ctx: WorkerContext): Task {
  return async () => {
    const ended = await sweepExpiredUploads(ctx);
    if (ended > 0) ctx.logger.info({ ended }, 'expired upload sessions aborted');
  };
}
