import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import type { TaskMessageRow } from '../../../shared/db/queries/taskMessages.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { appendMessage } from '../../../shared/tasks/messages.ts';
import { createTenant, insertBareTask, type Tenant } from '../../helpers/fixtures.ts';
import { waitUntil } from '../api/tasks.helpers.ts';
import {
  connectSdk,
  type McpServer,
  openListen,
  startMcpServer,
  stateless,
  statelessHeaders,
  statelessMessage,
} from './mcp.helpers.ts';

// No worker runs here: a task's reply commits only when the test commits it, by the worker's path.
let s: McpServer;
let tenant: Tenant;
const holdMs = 3000;
const streamsPerWorkspace = 3;
const drain = new AbortController();

beforeAll(async () => {
  s = await startMcpServer(
    { STREAMS_PER_WORKSPACE: String(streamsPerWorkspace) },
    { taskStream: { holdMs, heartbeatMs: 200 }, shutdown: drain.signal },
  );
  tenant = await createTenant(s.t.deps.pool);
});
afterAll(() => s.close());

/** A staff reply to the task, committed as the worker commits one (its NOTIFY included). */
async function reply(taskId: string, text: string, workspace = tenant): Promise<TaskMessageRow> {
  const row = await s.t.deps.pool.transaction((tx) =>
    appendMessage(tx, {
      id: newId('msg'),
      workspaceId: workspace.workspaceId,
      taskId,
      role: 'assistant',
      text,
      projectId: workspace.projectId,
    }),
  );
  return row!;
}

const updated = (uri: string) => (m: Record<string, unknown>) =>
  m.method === 'notifications/resources/updated' && (m.params as { uri: string }).uri === uri;

describe('subscriptions/listen (2026-07-28)', () => {
  it('tells an agent that created a task when the staff reply commits', async () => {
    const client = await connectSdk(s, tenant.testKey);
    const created = await client.callTool({
      name: 'create_task',
      arguments: { input: 'Draft the offsite agenda.' },
    });
    const taskId = (created.structuredContent as { task: { id: string } }).task.id;
    await client.close();
    const uri = `svc://tasks/${taskId}`;
    const listen = await openListen(s, tenant.testKey, [uri, 'svc://tasks/task_missing', 'svc://files/x']);
    expect(listen.status).toBe(200);
    const ack = await listen.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
    expect(ack.params).toEqual({
      _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' },
      notifications: { resourceSubscriptions: [uri] },
    });
    await reply(taskId, 'Here is the agenda.');
    const note = await listen.waitFor(updated(uri));
    expect(note.params).toEqual({ uri, _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } });
    // The notification says "read it again": the reply is there.
    const read = await stateless(s, tenant.testKey, 'resources/read', { uri });
    const contents = (read.body.result as { contents: { text: string }[] }).contents;
    expect(contents[0]!.text).toContain('Here is the agenda.');
    expect(JSON.parse(contents[1]!.text)).toMatchObject({
      awaitingReply: false,
      lastMessage: { role: 'assistant' },
    });
    // The stream ends after the hold with the request's result, naming its subscription.
    await listen.ended;
    expect(listen.messages.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'listen-1',
      result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } },
    });
    expect(listen.messages.filter(updated(uri))).toHaveLength(1);
  });

  it('closes at once when nothing asked for can be followed, and follows nothing of another workspace', async () => {
    const other = await createTenant(s.t.deps.pool);
    const theirs = await insertBareTask(s.t.deps.pool, other, 'Not yours');
    const listen = await openListen(s, tenant.testKey, [`svc://tasks/${theirs}`]);
    await listen.ended;
    expect(listen.messages.map((m) => m.method ?? 'result')).toEqual([
      'notifications/subscriptions/acknowledged',
      'result',
    ]);
    expect((listen.messages[0]!.params as { notifications: unknown }).notifications).toEqual({});
  });

  it('refuses a credential without the task stream scope', async () => {
    const filesOnly = (await tenant.key({ livemode: false, scopeLevel: 'package', packages: ['files'] }))
      .secret;
    const taskId = await insertBareTask(s.t.deps.pool, tenant, 'Scoped');
    const listen = await openListen(s, filesOnly, [`svc://tasks/${taskId}`]);
    expect(listen.body).toMatchObject({ error: { code: -32000, data: { code: 'api_key_operation_scope' } } });
  });

  it('is answered "use 2026-07-28" in the handshake revisions, and must stand alone in its POST', async () => {
    const res = await fetch(s.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.testKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} }),
    });
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32601);
    const batch = await fetch(s.url, {
      method: 'POST',
      headers: { ...statelessHeaders(tenant.testKey, 'subscriptions/listen') },
      body: JSON.stringify([
        statelessMessage('subscriptions/listen', { notifications: { resourceSubscriptions: [] } }, 1),
        statelessMessage('ping', {}, 2),
      ]),
    });
    const answers = (await batch.json()) as { id: number; error?: { code: number }; result?: unknown }[];
    expect(answers[0]!.error!.code).toBe(-32600);
    expect(answers[1]!.result).toEqual({ resultType: 'complete' });
  });

  it('counts against STREAMS_PER_WORKSPACE with the task streams, and ends every stream at drain', async () => {
    const workspace = await createTenant(s.t.deps.pool);
    const taskId = await insertBareTask(s.t.deps.pool, workspace, 'Busy');
    const uri = `svc://tasks/${taskId}`;
    const open = [];
    for (let i = 0; i < streamsPerWorkspace - 1; i++) {
      open.push(await openListen(s, workspace.testKey, [uri], `l${i}`));
    }
    const taskStream = await fetch(`${s.base}/api/pub/v1/tasks/${taskId}/stream`, {
      headers: { authorization: `Bearer ${workspace.testKey}`, accept: 'text/event-stream' },
    });
    expect(taskStream.status).toBe(200);
    const refused = await openListen(s, workspace.testKey, [uri], 'over');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: { code: 'rate_limited' } });
    await Promise.all(
      open.map((l) => l.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged')),
    );
    expect(s.t.deps.openStreams.count('mcp')).toBeGreaterThanOrEqual(2);
    drain.abort();
    await Promise.all(open.map((l) => l.ended));
    for (const l of open) expect(l.messages.at(-1)).toMatchObject({ result: { resultType: 'complete' } });
    await taskStream.body?.cancel();
    await waitUntil(async () => (s.t.deps.streamLeases.held === 0 ? true : undefined));
  });
});
