import type { Request, Response } from 'express';
import type { DatabasePool } from 'slonik';

import type { Config } from '../../shared/config/config.ts';
import { contentFitsDeclared, refusedDeclaredType } from '../../shared/files/contentPolicy.ts';
import { fileObjectKey } from '../../shared/files/dto.ts';
import {
  releaseStorageHold,
  renewStorageHold,
  takeStorageHold,
} from '../../shared/files/storageHoldLease.ts';
import type { StorageHold } from '../../shared/files/storageQuota.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import type { ObjectStore } from '../../shared/storage/objectStore.ts';
import { type ReceivedUpload, receiveUpload, type UploadReservation } from './receiveUpload.ts';
import type { UploadGauge } from './uploadGauge.ts';

export type ReceiveFileDeps = {
  pool: DatabasePool;
  objectStore: ObjectStore;
  uploads: UploadGauge;
  logger: Logger;
  config: Pick<Config, 'filesDirectMaxBytes' | 'uploadIdleTimeoutMs'>;
};

/**
 * The quota hold for one upload: what the body can hold at most, or what the quota has left. It is a
 * lease renewed until the answer has gone out (see storageHoldLease), so a hold nobody could release
 * stops counting within minutes, not after the slowest upload's hour.
 */
function holdFor(deps: ReceiveFileDeps, req: Request, res: Response, onHold: (hold: StorageHold) => void) {
  const maxBytes = deps.config.filesDirectMaxBytes;
  return async (): Promise<UploadReservation> => {
    const declared = Number(req.get('content-length'));
    const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, maxBytes) : maxBytes;
    const hold = await takeStorageHold(
      deps.pool,
      { workspaceId: req.principal!.workspaceId, bytes, partial: true },
      deps.logger,
    );
    onHold(hold);
    // By the answer the hold has become stored bytes or is being released.
    const stopRenewing = renewStorageHold(deps.pool, hold, deps.logger);
    res.once('close', stopRenewing);
    return {
      maxBytes: hold.bytes,
      release: async () => {
        stopRenewing();
        await releaseStorageHold(deps.pool, hold, deps.logger);
      },
    };
  };
}

/**
 * The POST /files body: the `file` field streamed to the file's object, against a quota hold taken
 * before the body is read. The hold is the caller's once a file is stored (`hold`).
 * @throws what receiveUpload throws.
 */
export async function receiveFile(
  req: Request,
  res: Response,
  deps: ReceiveFileDeps,
  fileId: string,
): Promise<{ received: ReceivedUpload; hold: StorageHold | undefined }> {
  let hold: StorageHold | undefined;
  const received = await receiveUpload(
    req,
    res,
    {
      fileField: 'file',
      maxFileBytes: deps.config.filesDirectMaxBytes,
      textFields: [],
      acceptsFile: (mimeType) => !refusedDeclaredType(mimeType),
      acceptsContent: (head, mimeType) => contentFitsDeclared(mimeType, head),
      objectKey: fileObjectKey(req.principal!.workspaceId, fileId),
      reserve: holdFor(deps, req, res, (h) => (hold = h)),
    },
    {
      store: deps.objectStore,
      gauge: deps.uploads,
      idleTimeoutMs: deps.config.uploadIdleTimeoutMs,
      logger: deps.logger,
    },
  );
  return { received, hold };
}
