import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { insertFile } from '../../../shared/db/queries/files.ts';
import { insertStaffMember } from '../../../shared/db/queries/staff.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId, randomBase62 } from '../../../shared/primitives/ids.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTwoTenants } from '../../helpers/tenantContext.ts';
import { createTask, waitUntil } from './tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ t, tenant, other } = await contextWithTwoTenants({ worker: true })));
afterAll(() => t.close());

type Msg = { id: string; role: string; text: string; createdAt: string };

async function messagesOf(taskId: string, key = tenant.testKey): Promise<Msg[]> {
  const res = await t.http
    .get(api(`/tasks/${taskId}/messages`))
    .set(bearer(key))
    .expect(200);
  return res.body.data as Msg[];
}

/** Waits until the task has `count` messages, the last one an assistant reply. */
function repliesArrive(taskId: string, count: number): Promise<Msg[]> {
  return waitUntil(async () => {
    const data = await messagesOf(taskId);
    return data.length >= count && data.at(-1)!.role === 'assistant' ? data : undefined;
  });
}

function staffMember(workspaceId: string, role = 'You review contracts.') {
  return insertStaffMember(t.deps.pool, {
    id: newId('staff'),
    workspaceId,
    name: 'Reviewer',
    role,
    apiAddress: `stf_${randomBase62(24)}`,
    apiChannelEnabled: true,
  });
}

function file(workspaceId: string) {
  return insertFile(t.deps.pool, {
    id: newId('file'),
    workspaceId,
    memberId: null,
    filename: 'brief.pdf',
    mimeType: 'application/pdf',
    sizeBytes: 1234,
    kind: 'file',
    storageKey: `files/${randomBase62(10)}`,
  });
}

describe('a task conversation with a test key', () => {
  it('creates a task, replies, takes a second message and replies again', async () => {
    const created = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'Summarise the quarterly numbers.', title: 'Quarterly summary' })
      .expect(202);
    const task = created.body.task;
    expect(task).toEqual({
      id: expect.stringMatching(/^task_/),
      title: 'Quarterly summary',
      assigneeStaffIds: [],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(created.headers.location).toBe(`/api/pub/v1/tasks/${task.id}`);

    // The reply job row and its graphile job were committed with the task.
    const jobs = await t.deps.pool.any(sql.type(z.object({ type: z.string(), input: z.unknown() }))`
      select type, input from jobs where input->>'taskId' = ${task.id}
    `);
    expect(jobs).toEqual([
      { type: 'task.reply', input: expect.objectContaining({ taskId: task.id, staffId: null }) },
    ]);

    const first = await repliesArrive(task.id, 2);
    expect(first.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(first[0]!.text).toBe('Summarise the quarterly numbers.');
    // The test-mode reply speaks about the requester's own words, never the framing the model gets
    // around them (that framing is checked where the model's input is recorded: tasks.reply.test.ts).
    expect(first[1]!.text).toBe(
      'Test mode reply. Received 32 characters of input: "Summarise the quarterly numbers."',
    );

    const sent = await postAs(t.http, tenant.testKey, `/tasks/${task.id}/messages`)
      .send({ input: 'Now compare them with last year.' })
      .expect(202);
    expect(sent.body.message).toEqual({
      id: expect.stringMatching(/^msg_/),
      role: 'user',
      text: 'Now compare them with last year.',
      createdAt: expect.any(String),
    });

    const second = await repliesArrive(task.id, 4);
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(second[3]!.text).toBe(
      'Test mode reply. Received 32 characters of input: "Now compare them with last year."',
    );

    const read = await t.http
      .get(api(`/tasks/${task.id}`))
      .set(bearer(tenant.testKey))
      .expect(200);
    expect(read.body.task).toMatchObject({ id: task.id, title: 'Quarterly summary', assigneeStaffIds: [] });

    // Test keys cost nothing: both replies settled at 0 and metered.
    const metered = await t.deps.pool.any(sql.type(
      z.object({ cost_minor: z.number(), operation: z.string() }),
    )`
      select m.cost_minor, m.operation from metering_records m join jobs j on j.id = m.job_id
      where j.input->>'taskId' = ${task.id}
    `);
    expect(metered).toEqual([
      { cost_minor: 0, operation: 'task.reply' },
      { cost_minor: 0, operation: 'task.reply' },
    ]);
    // Every message recorded task.message.created (the webhook source).
    const events = await t.deps.pool.anyFirst(sql.type(z.object({ role: z.string() }))`
      select data->'message'->>'role' as role from events
      where type = 'task.message.created' and data->>'taskId' = ${task.id} order by created_at, id
    `);
    expect([...events].sort()).toEqual(['assistant', 'assistant', 'user', 'user']);
  });

  it('derives a title from the input when none is given', async () => {
    const res = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: '\n  First line of the brief\nsecond line' })
      .expect(202);
    expect(res.body.task.title).toBe('First line of the brief');
  });

  it('assigns a staff member, whose reply comes from a staff run', async () => {
    const staff = await staffMember(tenant.workspaceId);
    const res = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'Check clause 4.', staffId: staff.id })
      .expect(202);
    expect(res.body.task.assigneeStaffIds).toEqual([staff.id]);
    await repliesArrive(res.body.task.id, 2);
    const staffOfReply = await t.deps.pool.oneFirst(sql.type(z.object({ staff_id: z.string().nullable() }))`
      select staff_id from task_messages where task_id = ${res.body.task.id} and role = 'assistant'
    `);
    expect(staffOfReply).toBe(staff.id);
  });

  it('attaches files of the workspace', async () => {
    const f = await file(tenant.workspaceId);
    const res = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'Read the attached brief.', fileIds: [f.id, f.id] })
      .expect(202);
    const attached = await t.deps.pool.anyFirst(sql.type(z.object({ file_id: z.string() }))`
      select a.file_id from task_message_files a join task_messages m on m.id = a.message_id
      where m.task_id = ${res.body.task.id}
    `);
    expect(attached).toEqual([f.id]);
  });

  it('answers not_found for a staff member, file or task of another workspace', async () => {
    const foreignStaff = await staffMember(other.workspaceId);
    const foreignFile = await file(other.workspaceId);
    const staffRes = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'x', staffId: foreignStaff.id })
      .expect(404);
    expect(staffRes.body.error.code).toBe('not_found');
    const fileRes = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'x', fileIds: [foreignFile.id] })
      .expect(404);
    expect(fileRes.body.error).toMatchObject({
      code: 'not_found',
      message: expect.stringContaining(foreignFile.id),
    });

    const id = await createTask(t, other.testKey, { input: 'private' });
    for (const req of [
      t.http.get(api(`/tasks/${id}`)),
      t.http.get(api(`/tasks/${id}/messages`)),
      t.http.get(api(`/tasks/${id}/stream`)),
      t.http.post(api(`/tasks/${id}/messages`)).send({ input: 'let me in' }),
    ]) {
      const res = await req.set(bearer(tenant.testKey)).expect(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // Nothing was created for the failed requests.
    const count = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from task_messages where task_id = ${id}
    `);
    expect(count).toBeGreaterThanOrEqual(1);
    expect((await messagesOf(id, other.testKey)).filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('rejects bodies outside the schema', async () => {
    const empty = await postAs(t.http, tenant.testKey, '/tasks').send({ input: '' }).expect(422);
    expect(empty.body.error.code).toBe('invalid_request_body');
    const long = await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'x', title: 'y'.repeat(201) })
      .expect(422);
    expect(long.body.error.issues).toEqual([expect.objectContaining({ path: 'title' })]);
    await postAs(t.http, tenant.testKey, '/tasks')
      .send({ input: 'x'.repeat(50_001) })
      .expect(422);
  });

  it('requires projectId from a key that spans several projects', async () => {
    const second = await tenant.addProject('Second');
    const key = await tenant.key({ livemode: false, projectIds: [tenant.projectId, second] });
    const res = await postAs(t.http, key.secret, '/tasks').send({ input: 'x' }).expect(422);
    expect(res.body.error.code).toBe('project_id_required');
    const ok = await postAs(t.http, key.secret, '/tasks').send({ input: 'x', projectId: second }).expect(202);
    const project = await t.deps.pool.oneFirst(sql.type(z.object({ project_id: z.string() }))`
      select project_id from tasks where id = ${ok.body.task.id}
    `);
    expect(project).toBe(second);
  });
});
