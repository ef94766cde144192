import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  findReferencedDocumentKeys,
  recordDeckPdf,
  upsertFileDocument,
} from '../../../shared/db/queries/fileDocuments.ts';
import { findReferencedFileKeys, insertFile } from '../../../shared/db/queries/files.ts';
import { insertJob } from '../../../shared/db/queries/jobs.ts';
import { newId } from '../../../shared/primitives/ids.ts';
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

  it("removes a document's objects it no longer uses (an earlier revision's PDF), and keeps the rest", async () => {
    const ctx = workerContextFor(t);
    const tenant = await createTenant(t.deps.pool);
    const fileId = newId('file');
    const prefix = `documents/${fileId}/`;
    await insertFile(t.deps.pool, {
      id: fileId,
      workspaceId: tenant.workspaceId,
      memberId: tenant.memberId,
      filename: 'deck.pptx',
      mimeType: 'application/octet-stream',
      sizeBytes: 5,
      kind: 'deck',
      storageKey: `files/${tenant.workspaceId}/${fileId}`,
    });
    const keys = ['parsed.json', 'deck-r1.pdf', 'deck-r2.pdf'].map((name) => `${prefix}${name}`);
    for (const key of keys) await ctx.objectStore.put(key, Buffer.from('bytes'));
    await upsertFileDocument(t.deps.pool, {
      fileId,
      workspaceId: tenant.workspaceId,
      kind: 'deck',
      parsedKey: keys[0]!,
      exports: {},
      summary: {},
    });
    await recordDeckPdf(t.deps.pool, { fileId, pdfKey: keys[2]!, revision: 1, pages: 1 });
    const sweep = () => sweepOrphanUploads(ctx, new Date(Date.now() + 60_000), prefix, findReferencedDocumentKeys);
    expect(await sweep()).toBe(1);
    expect(await ctx.objectStore.stat(keys[1]!)).toBeUndefined();
    expect(await ctx.objectStore.stat(keys[0]!)).toBeDefined();
    expect(await ctx.objectStore.stat(keys[2]!)).toBeDefined();
  });
});
