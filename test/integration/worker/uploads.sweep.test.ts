import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { findReferencedFileKeys, insertFile } from '../../../shared/db/queries/files.ts';
import { insertJob } from '../../../shared/db/queries/jobs.ts';
import { newId } from '../../../shared/ids.ts';
import { sweepOrphanUploads } from '../../../worker/sweepUploads.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant } from '../../helpers/fixtures.ts';
import { workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;

beforeAll(async () => {
  t = await setupTestContext();
});
afterAll(() => t.close());

describe('orphan upload sweep', () => {
  it('removes old job uploads that no unfinished job needs, and keeps the rest', async () => {
    const ctx = workerContextFor(t);
    const tenant = await createTenant(t.deps.pool);
    // Its own prefix: the bucket is shared with test files running at the same time.
    const prefix = `job-inputs/sweep-test-${newId('t')}/`;
    const orphan = `${prefix}audio/${newId('aud')}`;
    const needed = `${prefix}ocr/${newId('ocr')}`;
    const unrelated = `files/${newId('file')}`;
    for (const key of [orphan, needed, unrelated]) await ctx.objectStore.put(key, Buffer.from('bytes'));
    await insertJob(t.deps.pool, {
      id: newId('job'),
      workspaceId: tenant.workspaceId,
      projectId: tenant.projectId,
      keyId: null,
      type: 'ocr.extract',
      livemode: true,
      input: { objectKey: needed },
      holdId: null,
      requestId: null,
    });
    // Nothing is old enough yet.
    expect(await sweepOrphanUploads(ctx, new Date(Date.now() - 3_600_000), prefix)).toBe(0);
    // With the cut-off in the future every upload counts as old.
    expect(await sweepOrphanUploads(ctx, new Date(Date.now() + 60_000), prefix)).toBe(1);
    expect(await ctx.objectStore.stat(orphan)).toBeUndefined();
    expect(await ctx.objectStore.stat(needed)).toBeDefined();
    expect(await ctx.objectStore.stat(unrelated)).toBeDefined();
    await ctx.objectStore.remove(needed);
    await ctx.objectStore.remove(unrelated);
  });

  it('removes old file bytes that no file or open upload session refers to', async () => {
    const ctx = workerContextFor(t);
    const tenant = await createTenant(t.deps.pool);
    const prefix = `files/${tenant.workspaceId}/`;
    const orphan = `${prefix}${newId('file')}`;
    const fileId = newId('file');
    const kept = `${prefix}${fileId}`;
    for (const key of [orphan, kept]) await ctx.objectStore.put(key, Buffer.from('bytes'));
    await insertFile(t.deps.pool, {
      id: fileId,
      workspaceId: tenant.workspaceId,
      memberId: tenant.memberId,
      filename: 'kept.txt',
      mimeType: 'text/plain',
      sizeBytes: 5,
      kind: 'file',
      storageKey: kept,
    });
    expect(
      await sweepOrphanUploads(ctx, new Date(Date.now() - 3_600_000), prefix, findReferencedFileKeys),
    ).toBe(0);
    expect(await sweepOrphanUploads(ctx, new Date(Date.now() + 60_000), prefix, findReferencedFileKeys)).toBe(
      1,
    );
    expect(await ctx.objectStore.stat(orphan)).toBeUndefined();
    expect(await ctx.objectStore.stat(kept)).toBeDefined();
  });
});
