import { setTimeout as sleep } from 'node:timers/promises';

import type { DatabasePool } from 'slonik';

import { extendStorageReservation } from '../db/queries/storageReservations.ts';
import { isDatabaseUnavailable } from '../errors/unavailable.ts';
import type { Logger } from '../observability/logger.ts';
import { newId } from '../primitives/ids.ts';
import { releaseStorage, reserveStorage, type StorageHold } from './storageQuota.ts';

/**
 * A quota hold for an upload in flight is a lease: it counts for `leaseSeconds` and is renewed every
 * `renewEveryMs` while its upload runs. A hold nobody can release (the process died, PostgreSQL lost
 * the answer to the statement that took it, the release could not be written for as long as
 * `releaseRetryMs`) stops counting at most `leaseSeconds` after its last renewal, and the upload
 * sweeper (every 5 minutes) removes it with a log line.
 */
export const storageHoldLease = { leaseSeconds: 120, renewEveryMs: 30_000, releaseRetryMs: 120_000 };

const firstRetryMs = 500;
const maxRetryDelayMs = 5000;

/**
 * Takes a quota hold (see reserveStorage) as a lease. When the database went away during the taking,
 * whether it committed is unknown (PostgreSQL may have committed it and lost the answer), so the hold
 * is released in the background as any failed release is, by its id: it stops counting as soon as
 * the database is back, not when its lease ends.
 * @throws what reserveStorage throws.
 */
export async function takeStorageHold(
  pool: DatabasePool,
  request: { workspaceId: string; bytes: number; partial?: boolean; id?: string },
  logger: Logger,
): Promise<StorageHold> {
  const id = request.id ?? newId('srv');
  try {
    return await reserveStorage(pool, { ...request, id, ttlSeconds: storageHoldLease.leaseSeconds });
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      void releaseStorageHold(pool, { id, workspaceId: request.workspaceId, bytes: request.bytes }, logger);
    }
    throw error;
  }
}

/**
 * Keeps `hold` counting while its upload runs, renewing its lease; returns the function that stops
 * renewing (the upload ended: the hold was committed, released, or is being released). A renewal
 * that fails is logged and tried again at the next turn; one that finds the hold gone or expired
 * stops.
 */
export function renewStorageHold(
  pool: DatabasePool,
  hold: StorageHold,
  logger: Logger,
  options: { leaseSeconds?: number; renewEveryMs?: number } = {},
): () => void {
  const leaseSeconds = options.leaseSeconds ?? storageHoldLease.leaseSeconds;
  const timer = setInterval(() => {
    extendStorageReservation(pool, hold.id, leaseSeconds).then(
      (extended) => {
        if (!extended) clearInterval(timer);
      },
      (error: unknown) => logger.warn({ err: error, hold: hold.id }, 'renewing a storage quota hold failed'),
    );
  }, options.renewEveryMs ?? storageHoldLease.renewEveryMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Releases `hold`. If the release cannot be written (PostgreSQL restarting), it is tried again in the
 * background with backoff (0.5 s doubling to 5 s) for `retryForMs`, each failure logged; resolves
 * after the first try either way, so an answer never waits for the database to come back. A hold
 * still not released when the retries give up stops counting when its lease ends (see
 * storageHoldLease). Never throws.
 */
export async function releaseStorageHold(
  pool: DatabasePool,
  hold: StorageHold,
  logger: Logger,
  retryForMs = storageHoldLease.releaseRetryMs,
): Promise<void> {
  try {
    await releaseStorage(pool, hold);
    return;
  } catch (error) {
    logger.warn(
      { err: error, hold: hold.id, bytes: hold.bytes },
      'releasing a storage quota hold failed; retrying',
    );
  }
  void retryRelease(pool, hold, logger, retryForMs);
}

async function retryRelease(pool: DatabasePool, hold: StorageHold, logger: Logger, retryForMs: number) {
  const giveUpAt = Date.now() + retryForMs;
  for (let delay = firstRetryMs; ; delay = Math.min(delay * 2, maxRetryDelayMs)) {
    await sleep(delay, undefined, { ref: false });
    try {
      await releaseStorage(pool, hold);
      logger.info({ hold: hold.id }, 'storage quota hold released after retrying');
      return;
    } catch (error) {
      if (Date.now() >= giveUpAt) {
        logger.error(
          { err: error, hold: hold.id, bytes: hold.bytes },
          'releasing a storage quota hold failed for good; it stops counting when its lease ends',
        );
        return;
      }
    }
  }
}
