import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { DocumentRejected } from '../../../worker/documents/limits.ts';
import { parseDocument } from '../../../worker/documents/parseDocument.ts';
import { readZipDirectory } from '../../../worker/documents/zipDirectory.ts';
import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import {
  kindAfterParse,
  makeCrowdedPptx,
  makeInflatingXlsx,
  makeXlsx,
  pptxType,
  xlsxType,
} from '../../helpers/documents.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { logLines, type Spawned, spawnNode } from '../../helpers/processes.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

const MiB = 1024 * 1024;

let t: TestContext;
let tenant: Tenant;
let worker: Spawned | undefined;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  // The real worker process of the second describe boots while the in-process parses of the first run.
  worker = spawnNode('worker/main.ts', {
    DATABASE_URL: t.databaseUrl,
    S3_ENDPOINT: t.s3.endpoint,
    S3_BUCKET: t.s3.bucket,
    LOG_LEVEL: 'info',
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
  });
});
afterAll(async () => {
  await worker?.stop();
  await t.close();
});

/** Node names its worker threads' OS threads WorkerThread: how many this process has now. */
function threadsOfWorkers(): number {
  return readdirSync('/proc/self/task').filter((task) => {
    try {
      return readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() === 'WorkerThread';
    } catch (error) {
      // A thread that ended between the listing and the read.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }).length;
}

/** A workbook exceljs takes seconds to read: 50,000 cells. */
const slowWorkbook = () =>
  makeXlsx(Array.from({ length: 5000 }, (_, r) => Array.from({ length: 10 }, (_, c) => `cell ${r}:${c}`)));

describe('parseDocument', () => {
  let workbook: Buffer;
  // A copy per parse: parseDocument takes the memory of the bytes it is given.
  const slow = () => Buffer.from(workbook);
  const never = () => new AbortController().signal;
  beforeAll(async () => {
    workbook = await slowWorkbook();
  });

  it('terminates a parse at its deadline: rejected, and its thread is gone', async () => {
    const before = threadsOfWorkers();
    const parse = parseDocument('sheet', 'slow.xlsx', slow(), never(), { timeoutMs: 200, heapMb: 128 });
    await expect(parse).rejects.toThrow(new DocumentRejected('parsing took over 200 ms'));
    expect(threadsOfWorkers()).toBe(before);
  });

  it('ends a parse that passes its heap cap as a rejection, not a crash', async () => {
    const before = threadsOfWorkers();
    const parse = parseDocument('sheet', 'big.xlsx', slow(), never(), { timeoutMs: 120_000, heapMb: 16 });
    await expect(parse).rejects.toThrow(new DocumentRejected('parsing passed its 16 MiB heap'));
    expect(threadsOfWorkers()).toBe(before);
  });

  it("stops the thread when the job is aborted, with the signal's reason", async () => {
    const before = threadsOfWorkers();
    const controller = new AbortController();
    const settled = parseDocument('sheet', 'slow.xlsx', slow(), controller.signal).catch(
      (error: unknown) => error,
    );
    await waitUntil(async () => (threadsOfWorkers() > before ? true : undefined), 30_000, 10);
    controller.abort(new Error('worker shutting down'));
    expect(await settled).toEqual(new Error('worker shutting down'));
    expect(threadsOfWorkers()).toBe(before);
  });

  it('runs two parse threads at once; a third parse waits for one of them', async () => {
    const before = threadsOfWorkers();
    let settled = false;
    const parses = Promise.all([1, 2, 3].map(() => parseDocument('sheet', 's.xlsx', slow(), never())));
    void parses.finally(() => (settled = true));
    let most = 0;
    while (!settled) {
      most = Math.max(most, threadsOfWorkers() - before);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect((await parses).map((parsed) => parsed.kind)).toEqual(['sheet', 'sheet', 'sheet']);
    expect(most).toBe(2);
  }, 120_000);

  it('parses a document within its bounds in its thread', async () => {
    const parsed = await parseDocument('sheet', 'ok.xlsx', await makeXlsx([['tea', 3]]), never());
    expect(parsed).toEqual({ kind: 'sheet', sheets: [{ name: 'Budget', rows: [['tea', 3]] }] });
  });
});

/** A /proc/<pid>/status memory field in bytes. */
function memoryOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(
    readFileSync(`/proc/${pid}/status`, 'utf8'),
  )?.[1];
  if (kb === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kb) * 1024;
}

/** Milliseconds POST /text takes: a job the worker process runs, answered once it completes. */
async function textJobMs(): Promise<number> {
  const started = performance.now();
  await postAs(t.http, tenant.testKey, '/text').send({ prompt: 'Say hi' }).expect(201);
  return performance.now() - started;
}

async function upload(filename: string, bytes: Buffer, contentType: string): Promise<string> {
  const res = await postAs(t.http, tenant.liveKey, '/files')
    .attach('file', bytes, { filename, contentType })
    .expect(201);
  return res.body.file.id as string;
}

/** Is the file's parse job taken by a worker (running) and not yet done? */
async function parseRunning(fileId: string): Promise<boolean> {
  const locked = await t.deps.pool.anyFirst(sql.type(z.object({ locked: z.boolean() }))`
    select locked_at is not null as locked from graphile_worker.jobs
    where task_identifier = 'files__parse' and key = ${`files:parse:${fileId}`}
  `);
  return locked[0] === true;
}

describe('native documents uploaded to a real worker process', () => {
  beforeAll(async () => {
    await worker!.waitFor(/worker started/);
    // The boot status probe (an OCR engine among its checks) settles the process's memory first.
    await worker!.waitFor(/Completed task \d+ \(status__probe/);
    // The first call also builds the api's validators and warms both processes.
    await textJobMs();
  }, 120_000);

  it('hostile ones stay files, grow its memory by under 64 MiB, and hold up no text job beside them', async () => {
    // ~1.8 MiB whose sheet inflates to 144 MiB of XML; the same whose headers say the sheet is
    // 1 KiB; a real deck padded to 100,000 entries.
    const bomb = await makeInflatingXlsx();
    const liar = await makeInflatingXlsx(144 * MiB, { declaredSize: 1024 });
    const crowded = await makeCrowdedPptx();
    expect(bomb.length).toBeLessThan(2.5 * MiB);
    const { declaredBytes } = readZipDirectory(bomb, { maxEntries: 100, maxDeclaredBytes: Infinity });
    expect(declaredBytes).toBeGreaterThan(140 * MiB);
    const pid = worker!.child.pid!;
    const idle = [await textJobMs(), await textJobMs(), await textJobMs()];

    // The peak (VmHWM) restarts from the present size: what follows is measured from here.
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const before = memoryOf(pid, 'VmRSS');
    const ids = await Promise.all([
      upload('budget.xlsx', bomb, xlsxType),
      upload('forecast.xlsx', liar, xlsxType),
      upload('review.pptx', crowded, pptxType),
    ]);
    const beside = await textJobMs();
    const kinds = await Promise.all(ids.map((id) => kindAfterParse(t, id)));
    const peakGrowth = memoryOf(pid, 'VmHWM') - before;

    expect(kinds).toEqual(['file', 'file', 'file']);
    expect(peakGrowth).toBeLessThan(64 * MiB);
    // Against the slowest of three runs on the same process a moment before, plus half a second
    // for a loaded machine's noise (idle runs here spread over ~150 ms); reading these files on
    // the worker's own event loop held it for most of a second.
    expect(beside).toBeLessThan(Math.max(...idle) + 500);
    const lines = logLines(worker!.output());
    const refusals = lines.filter((line) => /did not parse as a (sheet|deck)/.test(String(line.msg)));
    // Logged at warn, each with why (in any order: they were uploaded together).
    expect(refusals).toHaveLength(3);
    expect(refusals.map((line) => [line.level, line.msg])).toEqual(
      expect.arrayContaining([
        [40, expect.stringContaining('the zip declares over 32 MiB inflated')],
        [40, expect.stringContaining('sheet1.xml inflates past its declared 1024 bytes')],
        [40, expect.stringContaining('the zip has 100000 entries (at most 10000)')],
      ]),
    );
    expect(lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
  }, 180_000);

  it('answers text jobs queued back to back beside a parse of seconds, each promptly', async () => {
    const idle = [await textJobMs(), await textJobMs(), await textJobMs()];
    // One row past maxSheetRows: exceljs works through 100,001 rows for seconds before the row
    // count refuses the workbook, so nothing is left to do on the event loop afterwards.
    const rows = Array.from({ length: 100_001 }, (_, r) => [`row ${r}`]);
    const fileId = await upload('rows.xlsx', await makeXlsx(rows), xlsxType);
    await waitUntil(async () => ((await parseRunning(fileId)) ? true : undefined), 30_000, 10);
    const beside: number[] = [];
    while (await parseRunning(fileId)) beside.push(await textJobMs());
    // Several ran while it parsed, none held up: the parse works in its thread, not on the event
    // loop that runs jobs (where exceljs held it for seconds at a stretch). Against the slowest of
    // three idle runs on the same process a moment before, with room for two cores shared with
    // the parse and a loaded machine.
    expect(beside.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...beside)).toBeLessThan(2 * Math.max(...idle) + 500);
    expect(await kindAfterParse(t, fileId)).toBe('file');
  }, 120_000);
});
