import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import { meteringRecord } from '../../../shared/db/queries/meteringRecords.ts';
import { columnsOf, sql } from '../../../shared/db/sql.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { waitUntil } from '../api/tasks.helpers.ts';
import { type Harness, startHarness } from '../oauth/harness.ts';

// The official SDK client, over real HTTP, as Claude, Cursor or the Inspector would connect.
let h: Harness;
let staffId: string;
let workflowId: string;
let broke: Tenant;

const allTools = [
  'create_task',
  'get_task',
  'list_task_messages',
  'send_task_message',
  'list_staff',
  'run_workflow',
  'list_projects',
  'search_brain',
];

async function connect(secret: string): Promise<Client> {
  const client = new Client({ name: 'mcp-tools-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${h.base}/api/pub/v1/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${secret}` } },
  });
  await client.connect(transport);
  return client;
}

// The request-log columns an MCP tool call must write as its REST call does.
const billedEntry = {
  status: z.number(),
  cost_minor: z.number(),
  project_id: z.string().nullable(),
  key_id: z.string().nullable(),
};

/** POST /tasks over real HTTP, as a REST client sends it beside the MCP one. */
const postTask = (secret: string, body: string) =>
  fetch(`${h.base}/api/pub/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body,
  });

/** Raw JSON-RPC text to /mcp as the tenant's test key, from a client that takes either answer form. */
const postMcp = (body: string) =>
  fetch(`${h.base}/api/pub/v1/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${h.tenant.testKey}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body,
  });

type Structured = Record<string, unknown>;
const structured = (r: unknown) => (r as { structuredContent: Structured }).structuredContent;
const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

/** Creates a task through the create_task tool and reads it back through get_task: its id. */
async function createAndReadOverMcp(input: string): Promise<string> {
  const client = await connect(h.tenant.testKey);
  const created = await client.callTool({ name: 'create_task', arguments: { input } });
  const taskId = (structured(created).task as { id: string }).id;
  await client.callTool({ name: 'get_task', arguments: { taskId } });
  await client.close();
  return taskId;
}

beforeAll(async () => {
  h = await startHarness();
  const staff = (await commands['staff create']!.run(h.t.deps.pool, {
    workspace: h.tenant.workspaceId,
    name: 'Writer',
    role: 'You write notes.',
  })) as { staff: { id: string } };
  staffId = staff.staff.id;
  const wf = (await commands['workflow create']!.run(h.t.deps.pool, {
    workspace: h.tenant.workspaceId,
    name: 'Team note',
    prompt: 'Write a note about {{topic}}.',
    fields: JSON.stringify([{ key: 'topic', type: 'text', required: true, maxLength: 40 }]),
    staff: staffId,
  })) as { workflow: { id: string } };
  workflowId = wf.workflow.id;
  await commands['brain add-page']!.run(h.t.deps.pool, {
    workspace: h.tenant.workspaceId,
    title: 'Holiday policy',
    body: 'Everyone gets thirty days of holiday each year.',
  });
  broke = await createTenant(h.t.deps.pool, { credits: 0 });
});
afterAll(() => h.close());

describe('every tool through the SDK client with an API key', () => {
  it('lists the eight tools with descriptions and input and output schemas', async () => {
    const client = await connect(h.tenant.testKey);
    expect(client.getServerVersion()?.name).toBe('svc-platform');
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual([...allTools].sort());
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
    }
    const getTask = tools.find((x) => x.name === 'get_task')!;
    expect(getTask.inputSchema.required).toEqual(['taskId']);
    await client.close();
  });

  it('calls every tool, with structured content and a text rendering', async () => {
    const client = await connect(h.tenant.testKey);
    const projects = await client.callTool({ name: 'list_projects', arguments: {} });
    expect(structured(projects).projects).toEqual([expect.objectContaining({ id: h.tenant.projectId })]);
    const staff = await client.callTool({ name: 'list_staff', arguments: {} });
    expect(JSON.stringify(structured(staff))).toContain(staffId);
    const created = await client.callTool({
      name: 'create_task',
      arguments: { input: 'Draft the release notes.', staffId },
    });
    expect(created.isError).toBe(false);
    const task = structured(created).task as { id: string; title: string };
    expect(JSON.parse(text(created))).toEqual(structured(created));
    const read = await client.callTool({ name: 'get_task', arguments: { taskId: task.id } });
    expect((structured(read).task as { id: string }).id).toBe(task.id);
    const sent = await client.callTool({
      name: 'send_task_message',
      arguments: { taskId: task.id, input: 'Keep it short.' },
    });
    expect(sent.isError).toBe(false);
    const messages = await client.callTool({
      name: 'list_task_messages',
      arguments: { taskId: task.id, limit: 10 },
    });
    const data = structured(messages).data as { text: string }[];
    expect(data.map((m) => m.text)).toEqual(
      expect.arrayContaining(['Draft the release notes.', 'Keep it short.']),
    );
    const run = await client.callTool({
      name: 'run_workflow',
      arguments: { workflowId, values: { topic: 'launch' } },
    });
    expect(run.isError).toBe(false);
    expect((structured(run).task as { id: string }).id).toMatch(/./);
    const search = await client.callTool({ name: 'search_brain', arguments: { query: 'holiday' } });
    expect((structured(search).results as { title: string }[])[0]!.title).toBe('Holiday policy');
    await client.close();
  });

  it('answers failures as isError results the model can act on', async () => {
    const client = await connect(h.tenant.testKey);
    const missing = await client.callTool({ name: 'get_task', arguments: { taskId: 'task_nope' } });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain('not_found');
    const invalid = await client.callTool({ name: 'create_task', arguments: { input: '', colour: 'red' } });
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toContain('invalid_request_body');
    const noId = await client.callTool({ name: 'get_task', arguments: {} });
    expect(text(noId)).toContain('taskId is required');
    const values = await client.callTool({ name: 'run_workflow', arguments: { workflowId, values: {} } });
    expect(text(values)).toContain('invalid_workflow_values');
    await client.close();
    const poor = await connect(broke.liveKey);
    const noCredit = await poor.callTool({ name: 'create_task', arguments: { input: 'Anything' } });
    const rest = await postTask(broke.liveKey, JSON.stringify({ input: 'Anything' }));
    // Task work is billed when the reply runs, so POST /tasks accepts without credit; the tool
    // answers as the REST call does (an empty balance shows on the reply, not here).
    expect(rest.status).toBe(202);
    expect(noCredit.isError).toBe(false);
    await poor.close();
  });

  it('checks path and query arguments with the contract, as the REST call is checked', async () => {
    const client = await connect(h.tenant.testKey);
    const created = await client.callTool({ name: 'create_task', arguments: { input: 'Page me.' } });
    const taskId = (structured(created).task as { id: string }).id;
    const zero = await client.callTool({ name: 'list_task_messages', arguments: { taskId, limit: 0 } });
    expect(zero.isError).toBe(true);
    expect(text(zero)).toContain('invalid_request_body');
    expect(text(zero)).toContain('limit');
    const padded = await client.callTool({ name: 'list_task_messages', arguments: { taskId, limit: '010' } });
    expect(text(padded)).toContain('must be a decimal integer');
    const extra = await client.callTool({ name: 'get_task', arguments: { taskId, colour: 'red' } });
    expect(text(extra)).toContain('Unknown argument(s): colour');
    await client.close();
  });

  it('takes an argument named __proto__ as an argument, never as the body’s prototype', async () => {
    // Raw JSON text: in a JS object literal "__proto__" would set the prototype, not make a key.
    const call = async (tool: string, args: string) => {
      const res = await postMcp(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${tool}","arguments":${args}}}`,
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { result: { isError: boolean; content: { text: string }[] } }).result;
    };
    // 600 KB under __proto__ is measured against run_workflow's 512 KiB limit, as REST measures it.
    const padding = 'x'.repeat(600_000);
    const big = await call(
      'run_workflow',
      `{"workflowId":"${workflowId}","__proto__":{"values":{"topic":"launch","notes":"${padding}"}}}`,
    );
    expect(big.isError).toBe(true);
    expect(big.content[0]!.text).toContain('larger than this endpoint accepts');
    // A small one is an unknown body property, as POST /tasks with the same JSON says; nothing is created.
    const sneaky = await call('create_task', '{"__proto__":{"input":"Sneaked in via the prototype."}}');
    expect(sneaky.isError).toBe(true);
    expect(sneaky.content[0]!.text).toContain('invalid_request_body');
    const rest = await postTask(h.tenant.testKey, '{"__proto__":{"input":"Sneaked in via the prototype."}}');
    expect(rest.status).toBe(422);
    const made = await h.t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from task_messages where text = 'Sneaked in via the prototype.'
    `);
    expect(made).toBe(0);
    // The request log keeps the key as it was sent, for both.
    await h.t.deps.requestLog.flush();
    const logged = await h.t.deps.pool.anyFirst(sql.type(z.object({ input: z.string().nullable() }))`
      select request_body -> '__proto__' ->> 'input' as input from request_logs
      where workspace_id = ${h.tenant.workspaceId} and path = '/api/pub/v1/tasks' and status = 422
        and request_body ? '__proto__'
    `);
    expect(logged).toEqual(['Sneaked in via the prototype.', 'Sneaked in via the prototype.']);
    // A tool without a body names it as an unknown argument.
    const read = await call('get_task', '{"taskId":"task_nope","__proto__":{"colour":"red"}}');
    expect(read.content[0]!.text).toContain('Unknown argument(s): __proto__');
  });

  it('shows only the tools a key may call, and refuses the others as a tool failure', async () => {
    const narrow = await h.tenant.key({
      livemode: false,
      scopeLevel: 'operation',
      operations: ['tasks.read'],
    });
    const client = await connect(narrow.secret);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(['get_task', 'list_projects']);
    const refused = await client.callTool({ name: 'list_staff', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('api_key_operation_scope');
    await client.close();
  });

  it('meters the reply of a task made by the tool as the REST call is metered', async () => {
    await h.t.startWorker();
    const client = await connect(h.tenant.liveKey);
    const viaTool = await client.callTool({
      name: 'create_task',
      arguments: { input: 'Summarise the week.' },
    });
    await client.close();
    const toolTask = (structured(viaTool).task as { id: string }).id;
    const rest = await postTask(h.tenant.liveKey, JSON.stringify({ input: 'Summarise the week.' }));
    const restTask = ((await rest.json()) as { task: { id: string } }).task.id;
    const meteredFor = (taskId: string) =>
      h.t.deps.pool.maybeOne(sql.type(meteringRecord)`
        select ${columnsOf(meteringRecord, 'm')}
        from metering_records m join jobs j on j.id = m.job_id
        where j.input ->> 'taskId' = ${taskId} or j.input ->> 'messageId' in (
          select id from task_messages where task_id = ${taskId})
      `);
    const [toolRecord, restRecord] = await waitUntil(async () => {
      const pair = [await meteredFor(toolTask), await meteredFor(restTask)];
      return pair[0] && pair[1] ? [pair[0], pair[1]] : undefined;
    }, 20_000);
    // Each call has its own record, job and request; everything it bills is the same.
    const { id, job_id, request_id, created_at } = restRecord;
    expect({ ...toolRecord, id, job_id, request_id, created_at }).toEqual(restRecord);
    expect(toolRecord.cost_minor).toBeGreaterThan(0);
  });

  it('writes the request-log entry the REST call writes', async () => {
    await createAndReadOverMcp('Log me.');
    const rest = await postTask(h.tenant.testKey, JSON.stringify({ input: 'Log me.' }));
    expect(rest.status).toBe(202);
    await h.t.deps.requestLog.flush();
    const row = z.object({ path: z.string(), ...billedEntry, request_id: z.string() });
    const rows = await h.t.deps.pool.any(sql.type(row)`
      select path, status, cost_minor::int, project_id, key_id, request_id from request_logs
      where workspace_id = ${h.tenant.workspaceId} and method = 'POST' and path = '/api/pub/v1/tasks'
        and request_body ->> 'input' = 'Log me.'
      order by created_at
    `);
    expect(rows).toHaveLength(2);
    const [viaMcp, viaRest] = rows;
    const { request_id: mcpId, ...mcpEntry } = viaMcp!;
    const { request_id: _restId, ...restEntry } = viaRest!;
    expect(mcpEntry).toEqual(restEntry);
    // The tool call's entry names the /mcp request it served.
    expect(mcpId).toMatch(/^req_[A-Za-z0-9]+\.0$/);
  });

  it('writes the request-log entry of a read as GET does, bodies included', async () => {
    const taskId = await createAndReadOverMcp('Read me.');
    const rest = await fetch(`${h.base}/api/pub/v1/tasks/${taskId}`, {
      headers: { authorization: `Bearer ${h.tenant.testKey}` },
    });
    expect(rest.status).toBe(200);
    await h.t.deps.requestLog.flush();
    const row = z.object({
      method: z.string(),
      ...billedEntry,
      ip: z.string().nullable(),
      request_body: z.unknown(),
      response_body: z.unknown(),
    });
    const rows = await h.t.deps.pool.any(sql.type(row)`
      select method, status, cost_minor::int, project_id, key_id, ip, request_body, response_body
      from request_logs
      where workspace_id = ${h.tenant.workspaceId} and path = ${`/api/pub/v1/tasks/${taskId}`}
      order by created_at
    `);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual(rows[1]);
    expect(rows[0]!.response_body).toMatchObject({ task: { id: taskId } });
  });

  it('logs a request of tool calls once per call, and any other /mcp request as itself', async () => {
    const created = await postTask(h.tenant.testKey, JSON.stringify({ input: 'Count my rows.' }));
    const taskId = ((await created.json()) as { task: { id: string } }).task.id;
    const getTask = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'get_task', arguments: { taskId } },
    });
    const post = async (body: unknown) => {
      const res = await postMcp(JSON.stringify(body));
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return res.headers.get('x-request-id')!;
    };
    const lone = await post(getTask(1));
    const batch = await post([getTask(1), getTask(2)]);
    const mixed = await post([getTask(1), { jsonrpc: '2.0', id: 2, method: 'ping' }]);
    const unknownTool = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nope' } });
    await h.t.deps.requestLog.flush();
    const entry = z.object({ request_id: z.string(), method: z.string(), path: z.string(), operation: z.string() });
    const rows = await h.t.deps.pool.any(sql.type(entry)`
      select request_id, method, path, operation from request_logs
      where request_id like any(${sql.array(
        [lone, batch, mixed, unknownTool].map((id) => `${id}%`),
        'text',
      )})
      order by request_id
    `);
    const taskPath = `/api/pub/v1/tasks/${taskId}`;
    const toolRow = (id: string) => ({ request_id: id, method: 'GET', path: taskPath, operation: 'tasks.read' });
    const mcpRow = (id: string) => ({ request_id: id, method: 'POST', path: '/api/pub/v1/mcp', operation: 'platform.mcp' });
    expect(rows).toEqual(
      [
        toolRow(`${lone}.0`),
        toolRow(`${batch}.0`),
        toolRow(`${batch}.1`),
        mcpRow(mixed),
        toolRow(`${mixed}.0`),
        mcpRow(unknownTool),
      ].sort((a, b) => (a.request_id < b.request_id ? -1 : 1)),
    );
  });
});
