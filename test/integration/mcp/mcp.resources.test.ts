import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import { legacyScryptHash } from '../../../shared/auth/passwords.ts';
import { insertMember } from '../../../shared/db/queries/members.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { deckSlides, kindAfterParse, makeDeckPptx, pptxType, storeFile } from '../../helpers/documents.ts';
import { createTenant, insertBareTask, type Tenant } from '../../helpers/fixtures.ts';
import { connectSdk, type McpServer, startMcpServer, stateless } from './mcp.helpers.ts';

let s: McpServer;
let tenant: Tenant;
let colleagueKey: string;
let workflowId: string;
let imageId: string;
let sheetId: string;
let pageId: string;
let bigId: string;
let deckId: string;
let taskId: string;
const image = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

const run = (name: string, flags: Record<string, string | boolean | undefined>) =>
  commands[name]!.run(s.t.deps.pool, flags);

beforeAll(async () => {
  s = await startMcpServer();
  tenant = await createTenant(s.t.deps.pool);
  const colleague = await insertMember(s.t.deps.pool, {
    id: newId('mem'),
    workspaceId: tenant.workspaceId,
    email: `colleague-${newId('x').toLowerCase()}@example.com`,
    passwordHash: legacyScryptHash('correct horse battery'),
    hasDeveloperAccess: true,
  });
  colleagueKey = (await tenant.key({ memberId: colleague.id, livemode: false })).secret;
  await run('brain add-page', {
    workspace: tenant.workspaceId,
    title: 'Holiday policy',
    body: 'Thirty days a year.',
  });
  await run('brain add-page', {
    workspace: tenant.workspaceId,
    title: 'Salary review notes',
    body: 'Only for me.',
    'private-to': tenant.memberId,
  });
  const wf = (await run('workflow create', {
    workspace: tenant.workspaceId,
    name: 'Team note',
    prompt: 'Write a {{tone}} note about {{topic}} for {{days}} days.',
    fields: JSON.stringify([
      { key: 'topic', type: 'text', required: true, maxLength: 40 },
      { key: 'tone', type: 'select', options: ['friendly', 'formal', 'frank'], required: true },
      { key: 'days', type: 'number', integer: true, min: 1, max: 30 },
    ]),
  })) as { workflow: { id: string } };
  workflowId = wf.workflow.id;
  deckId = await storeFile(s.t, tenant, 'review.pptx', await makeDeckPptx(), pptxType);
  imageId = await storeFile(s.t, tenant, 'pixel.png', image, 'image/png');
  sheetId = await storeFile(s.t, tenant, 'budget.csv', Buffer.from('item,cost\nrent,100\n'), 'text/csv');
  pageId = await storeFile(
    s.t,
    tenant,
    'notes.html',
    Buffer.from('<html><body><h1>Notes</h1><p>Hi <b>all</b></p></body></html>'),
    'text/html',
  );
  bigId = await storeFile(s.t, tenant, 'big.bin', Buffer.alloc(1024 * 1024 + 1));
  await s.t.startWorker();
  if ((await kindAfterParse(s.t, deckId)) !== 'deck') throw new Error('review.pptx did not parse as a deck');
  if ((await kindAfterParse(s.t, pageId)) !== 'page') throw new Error('notes.html did not parse as a page');
  if ((await kindAfterParse(s.t, sheetId)) !== 'sheet') {
    throw new Error('budget.csv did not parse as a sheet');
  }
  taskId = await insertBareTask(s.t.deps.pool, tenant, 'Quarterly plan');
});
afterAll(() => s.close());

type Contents = { uri: string; mimeType?: string; text?: string; blob?: string }[];

describe.each(['2025-06-18', '2025-11-25'])('resources through the SDK client (%s)', (version) => {
  let client: Client;
  beforeAll(async () => (client = await connectSdk(s, tenant.testKey, version)));
  afterAll(() => client.close());

  it('announces resources, prompts and completions with icons and titles', () => {
    const capabilities = client.getServerCapabilities()!;
    expect(capabilities).toMatchObject({ resources: { subscribe: false }, prompts: {}, completions: {} });
    const info = client.getServerVersion()!;
    expect(info.title).toBe('svc platform');
    expect(info.icons![0]!.mimeType).toBe('image/svg+xml');
  });

  it('lists pages, files and tasks newest first and reads each kind', async () => {
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris.slice(0, 5)).toEqual([
      `svc://tasks/${taskId}`,
      `svc://files/${bigId}`,
      `svc://files/${pageId}`,
      `svc://files/${sheetId}`,
      `svc://files/${imageId}`,
    ]);
    expect(uris).toEqual(
      expect.arrayContaining(['svc://brain/pages/holiday-policy', 'svc://brain/pages/salary-review-notes']),
    );
    for (const r of resources) expect(r.icons?.length).toBe(1);

    const page = (await client.readResource({ uri: 'svc://brain/pages/holiday-policy' }))
      .contents as Contents;
    expect(page).toEqual([
      {
        uri: 'svc://brain/pages/holiday-policy',
        mimeType: 'text/markdown',
        text: '# Holiday policy\n\nThirty days a year.',
      },
    ]);
    const png = (await client.readResource({ uri: `svc://files/${imageId}` })).contents as Contents;
    expect(png[0]!.mimeType).toBe('image/png');
    expect(Buffer.from(png[0]!.blob!, 'base64')).toEqual(image);
    const sheet = (await client.readResource({ uri: `svc://files/${sheetId}` })).contents as Contents;
    expect(sheet[0]).toMatchObject({ mimeType: 'text/csv', text: 'item,cost\nrent,100\n' });
    const html = (await client.readResource({ uri: `svc://files/${pageId}` })).contents as Contents;
    expect(html[0]).toMatchObject({ mimeType: 'text/markdown', text: '# Notes\n\nHi **all**' });
    const deck = (await client.readResource({ uri: `svc://files/${deckId}` })).contents as Contents;
    expect(deck[0]!.mimeType).toBe('text/markdown');
    expect(deck[0]!.text).toBe(
      [
        '# review.pptx',
        ...deckSlides.flatMap(([title, body], i) => [`## Slide ${i + 1}`, `${title}\n\n${body}`]),
      ].join('\n\n'),
    );
    // Over 1 MiB: a link to the REST download, fetched with the same key.
    const big = (await client.readResource({ uri: `svc://files/${bigId}` })).contents as Contents;
    expect(big[0]).toEqual({
      uri: `svc://files/${bigId}`,
      mimeType: 'text/uri-list',
      text: `${s.base}/api/pub/v1/files/${bigId}/content\r\n`,
    });
    const download = await fetch(big[0]!.text!.trim(), {
      headers: { authorization: `Bearer ${tenant.testKey}` },
    });
    expect((await download.arrayBuffer()).byteLength).toBe(1024 * 1024 + 1);
    const task = (await client.readResource({ uri: `svc://tasks/${taskId}` })).contents as Contents;
    expect(task[0]).toMatchObject({ mimeType: 'text/markdown', text: '# Quarterly plan' });
    expect(JSON.parse(task[1]!.text!)).toMatchObject({
      task: { id: taskId },
      messageCount: 0,
      lastMessage: null,
    });
  });

  it('offers a template per kind and answers an unknown URI with -32002 naming it', async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'svc://brain/pages/{slug}',
      'svc://files/{fileId}',
      'svc://tasks/{taskId}',
    ]);
    await expect(client.readResource({ uri: 'svc://tasks/task_missing' })).rejects.toMatchObject({
      code: -32002,
      data: { uri: 'svc://tasks/task_missing' },
    });
  });

  it('answers resources/subscribe with "not supported in this revision"', async () => {
    await expect(client.subscribeResource({ uri: `svc://tasks/${taskId}` })).rejects.toMatchObject({
      code: -32601,
      message: expect.stringContaining('subscriptions/listen with 2026-07-28'),
    });
  });
});

describe('visibility and scope, as the REST reads', () => {
  it('hides a private brain page from a colleague: not listed, not readable, not completed', async () => {
    const colleague = await connectSdk(s, colleagueKey);
    const { resources } = await colleague.listResources();
    expect(resources.map((r) => r.uri)).toContain('svc://brain/pages/holiday-policy');
    expect(resources.map((r) => r.uri)).not.toContain('svc://brain/pages/salary-review-notes');
    await expect(
      colleague.readResource({ uri: 'svc://brain/pages/salary-review-notes' }),
    ).rejects.toMatchObject({ code: -32002 });
    const ref = { type: 'ref/resource' as const, uri: 'svc://brain/pages/{slug}' };
    const theirs = await colleague.complete({ ref, argument: { name: 'slug', value: 's' } });
    expect(theirs.completion.values).toEqual([]);
    await colleague.close();
    const owner = await connectSdk(s, tenant.testKey);
    const mine = await owner.complete({ ref, argument: { name: 'slug', value: 's' } });
    expect(mine.completion.values).toEqual(['salary-review-notes']);
    await owner.close();
  });

  it('refuses a file resource to a key without the files scope, and does not list files to it', async () => {
    const tasksOnly = (await tenant.key({ livemode: false, scopeLevel: 'package', packages: ['tasks'] }))
      .secret;
    const client = await connectSdk(s, tasksOnly);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri.split('/')[2])).toEqual(['tasks']);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.name)).toEqual(['task']);
    await expect(client.readResource({ uri: `svc://files/${imageId}` })).rejects.toMatchObject({
      code: -32000,
      data: { code: 'api_key_operation_scope' },
    });
    await expect(client.listPrompts()).rejects.toMatchObject({ data: { code: 'api_key_operation_scope' } });
    await client.close();
  });

  it('keeps another workspace out of resources and completion', async () => {
    const other = await createTenant(s.t.deps.pool);
    const client = await connectSdk(s, other.testKey);
    expect((await client.listResources()).resources).toEqual([]);
    await expect(client.readResource({ uri: `svc://tasks/${taskId}` })).rejects.toMatchObject({
      code: -32002,
    });
    const done = await client.complete({
      ref: { type: 'ref/resource', uri: 'svc://tasks/{taskId}' },
      argument: { name: 'taskId', value: '' },
    });
    expect(done.completion.values).toEqual([]);
    await client.close();
  });
});

describe('rate limit', () => {
  it('takes a token for each call of a batch beyond the /mcp request', async () => {
    const limited = await createTenant(s.t.deps.pool, { rateLimitPerMinute: 2 });
    const res = await fetch(s.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${limited.testKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify([1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'resources/list' }))),
    });
    expect(res.status).toBe(200);
    const answers = (await res.json()) as {
      result?: unknown;
      error?: { code: number; data: { code: string } };
    }[];
    // The /mcp request took the first token of two; the batch's first call the second.
    expect(answers[0]!.result).toEqual({ resources: [] });
    expect(answers.slice(1).map((a) => [a.error?.code, a.error?.data.code])).toEqual([
      [-32000, 'rate_limited'],
      [-32000, 'rate_limited'],
    ]);
  });
});

describe('pagination', () => {
  it('pages newest first with a cursor, each resource once', async () => {
    const other = await createTenant(s.t.deps.pool);
    const ids: string[] = [];
    for (let i = 0; i < 57; i++) ids.push(await insertBareTask(s.t.deps.pool, other, `Task ${i}`));
    const client = await connectSdk(s, other.testKey);
    const first = await client.listResources();
    expect(first.resources).toHaveLength(50);
    const second = await client.listResources({ cursor: first.nextCursor! });
    expect(second.nextCursor).toBeUndefined();
    const seen = [...first.resources, ...second.resources].map((r) => r.uri);
    expect(seen).toEqual(ids.reverse().map((id) => `svc://tasks/${id}`));
    await expect(client.listResources({ cursor: 'not-ours' })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

describe('prompts from workflows', () => {
  it('lists each workflow with its fields as arguments and renders its template', async () => {
    const client = await connectSdk(s, tenant.testKey);
    const { prompts } = await client.listPrompts();
    expect(prompts).toEqual([
      expect.objectContaining({
        name: workflowId,
        title: 'Team note',
        arguments: [
          expect.objectContaining({ name: 'topic', required: true }),
          expect.objectContaining({
            name: 'tone',
            required: true,
            description: expect.stringContaining('friendly, formal, frank'),
          }),
          expect.objectContaining({ name: 'days', required: false }),
        ],
      }),
    ]);
    const got = await client.getPrompt({
      name: workflowId,
      arguments: { topic: 'the offsite', tone: 'frank', days: '3' },
    });
    expect(got.messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'Write a frank note about the offsite for 3 days.' } },
    ]);
    await client.close();
  });

  it('answers bad values with the issues run_workflow answers', async () => {
    const values = { tone: 'rude', days: '31', colour: 'red' };
    const client = await connectSdk(s, tenant.testKey);
    const refused = await client.getPrompt({ name: workflowId, arguments: values }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32602, data: { code: 'invalid_workflow_values' } });
    const rest = await fetch(`${s.base}/api/pub/v1/workflows/${workflowId}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ values: { tone: 'rude', days: 31, colour: 'red' } }),
    });
    const { error } = (await rest.json()) as { error: { issues: unknown[] } };
    expect(error.issues.length).toBe(4);
    expect((refused as { data: { issues: unknown } }).data.issues).toEqual(error.issues);
    const tool = await client.callTool({
      name: 'run_workflow',
      arguments: { workflowId, values: { tone: 'rude', days: 31, colour: 'red' } },
    });
    expect(tool.isError).toBe(true);
    for (const issue of error.issues as { path: string; message: string }[]) {
      expect((tool.content as { text: string }[])[0]!.text).toContain(issue.message);
    }
    await expect(client.getPrompt({ name: 'wf_missing' })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

describe('completion', () => {
  it('completes select options, earlier values, task ids by title and file ids by name', async () => {
    const client = await connectSdk(s, tenant.testKey);
    const prompt = { type: 'ref/prompt' as const, name: workflowId };
    const tone = await client.complete({ ref: prompt, argument: { name: 'tone', value: 'fr' } });
    expect(tone.completion).toMatchObject({ values: ['friendly', 'frank'], hasMore: false });
    const ran = await fetch(`${s.base}/api/pub/v1/workflows/${workflowId}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ values: { topic: 'budget season', tone: 'formal' } }),
    });
    expect(ran.status).toBe(202);
    const topic = await client.complete({ ref: prompt, argument: { name: 'topic', value: 'bud' } });
    expect(topic.completion.values).toEqual(['budget season']);
    const task = await client.complete({
      ref: { type: 'ref/resource', uri: 'svc://tasks/{taskId}' },
      argument: { name: 'taskId', value: 'quarter' },
    });
    expect(task.completion.values).toEqual([taskId]);
    const file = await client.complete({
      ref: { type: 'ref/resource', uri: 'svc://files/{fileId}' },
      argument: { name: 'fileId', value: 'BUD' },
    });
    expect(file.completion.values).toEqual([sheetId]);
    await expect(
      client.complete({ ref: prompt, argument: { name: 'nope', value: '' } }),
    ).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

describe('the stateless 2026-07-28 revision', () => {
  it('carries caching hints on the lists and resultType on every result', async () => {
    for (const method of ['tools/list', 'resources/list', 'prompts/list', 'resources/templates/list']) {
      const { status, body } = await stateless(s, tenant.testKey, method);
      expect(status).toBe(200);
      expect(body.result).toMatchObject({
        resultType: 'complete',
        ttlMs: expect.any(Number),
        cacheScope: 'private',
      });
    }
    const read = await stateless(s, tenant.testKey, 'resources/read', {
      uri: 'svc://brain/pages/holiday-policy',
    });
    expect(read.body.result).toMatchObject({
      resultType: 'complete',
      contents: [{ mimeType: 'text/markdown' }],
    });
    const discover = await stateless(s, tenant.testKey, 'server/discover');
    expect(discover.body.result).toMatchObject({
      capabilities: { resources: { subscribe: true }, prompts: {}, completions: {} },
    });
  });

  it('logs each call once, with the request id of its place in the body', async () => {
    const res = await fetch(s.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.testKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'resources/list' },
        { jsonrpc: '2.0', id: 2, method: 'prompts/list' },
        { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'svc://nothing' } },
      ]),
    });
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { id: number; error?: { code: number } }[];
    expect(answers.map((a) => a.error?.code)).toEqual([undefined, undefined, -32002]);
    const requestId = res.headers.get('x-request-id')!;
    await s.t.deps.requestLog.flush();
    const rows = await s.t.deps.pool.any(sql.type(
      z.object({ request_id: z.string(), operation: z.string(), status: z.number() }),
    )`
      select request_id, operation, status from request_logs where request_id like ${`${requestId}%`} order by request_id
    `);
    expect(rows).toEqual(
      [0, 1, 2].map((n) => ({ request_id: `${requestId}.${n}`, operation: 'platform.mcp', status: 200 })),
    );
  });
});
