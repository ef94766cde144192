import type { DatabasePool } from 'slonik';

import {
  insertBrainPage,
  lockWorkspaceBrainPages,
  type NewBrainPage,
  type TaskPage,
  upsertTaskPage,
} from '../db/queries/brainPages.ts';

/**
 * Adds an operator page (brain add-page) under the workspace's page lock: a page written at the same
 * moment (another add-page, a task's synthesis on any worker) cannot take the same slug.
 */
export function addBrainPage(pool: DatabasePool, page: NewBrainPage) {
  return pool.transaction(async (tx) => {
    await lockWorkspaceBrainPages(tx, page.workspaceId);
    return insertBrainPage(tx, page);
  });
}

/**
 * Writes a task's synthesised page under the workspace's page lock. Two syntheses of one task may
 * run at once (on two workers, a retry beside the next run): the first to take the lock writes the
 * page, the second then sees it and changes nothing unless it covers later messages (null). Never
 * fails on the page's unique keys.
 */
export function writeTaskPage(pool: DatabasePool, page: TaskPage) {
  return pool.transaction(async (tx) => {
    await lockWorkspaceBrainPages(tx, page.workspaceId);
    return upsertTaskPage(tx, page);
  });
}
