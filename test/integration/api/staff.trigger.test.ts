import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import { setStaffApiChannel, setStaffStatus } from '../../../shared/db/queries/staff.ts';
import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTwoTenants } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ t, tenant, other } = await contextWithTwoTenants()));
afterAll(() => t.close());

/** Staff are created the way operators create them: the CLI command (run in-process here). */
async function createStaff(workspaceId: string, name: string, apiChannel: boolean) {
  const out = (await commands['staff create']!.run(t.deps.pool, {
    workspace: workspaceId,
    name,
    role: `You are ${name}.`,
    'api-channel': apiChannel,
  })) as { staff: { id: string; apiAddress: string | null } };
  return out.staff;
}

const staffRow = (id: string) =>
  t.deps.pool.one(
    sql.type(z.object({ api_address: z.string() }))`select api_address from staff_members where id = ${id}`,
  );

describe('GET /staff', () => {
  it('lists active staff members with their trigger address, or null when the API channel is off', async () => {
    const open = await createStaff(tenant.workspaceId, 'Open', true);
    const closed = await createStaff(tenant.workspaceId, 'Closed', false);
    const retired = await createStaff(tenant.workspaceId, 'Retired', true);
    await setStaffStatus(t.deps.pool, retired.id, 'inactive');
    await createStaff(other.workspaceId, 'Elsewhere', true);

    const res = await t.http.get(api('/staff')).set(bearer(tenant.testKey)).expect(200);
    expect(res.body.staff).toEqual([
      { id: open.id, name: 'Open', role: 'You are Open.', status: 'active', apiAddress: open.apiAddress },
      { id: closed.id, name: 'Closed', role: 'You are Closed.', status: 'active', apiAddress: null },
    ]);
    expect(open.apiAddress).toMatch(/^stf_[0-9A-Za-z]{24}$/);
    expect(closed.apiAddress).toBeNull();
  });
});

describe('POST /staff/{address}/trigger', () => {
  it('creates a task titled by the subject and assigned to the staff member', async () => {
    const staff = await createStaff(tenant.workspaceId, 'Intake', true);
    const res = await postAs(t.http, tenant.testKey, `/staff/${staff.apiAddress}/trigger`)
      .send({ input: 'New lead from ACME.', subject: 'ACME lead' })
      .expect(202);
    expect(res.body.task).toEqual({
      id: expect.stringMatching(/^task_/),
      title: 'ACME lead',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const task = await t.http
      .get(api(`/tasks/${res.body.task.id}`))
      .set(bearer(tenant.testKey))
      .expect(200);
    expect(task.body.task.assigneeStaffIds).toEqual([staff.id]);
    const job = await t.deps.pool.one(sql.type(
      z.object({ staff_id: z.string(), hold_id: z.string().nullable() }),
    )`
      select input->>'staffId' as staff_id, hold_id from jobs where input->>'taskId' = ${res.body.task.id}
    `);
    // The trigger itself holds nothing; the run is billed by the reply job.
    expect(job).toEqual({ staff_id: staff.id, hold_id: null });
  });

  it('continues an earlier task of the workspace with threadId', async () => {
    const staff = await createStaff(tenant.workspaceId, 'Thread', true);
    const first = await postAs(t.http, tenant.testKey, `/staff/${staff.apiAddress}/trigger`)
      .send({ input: 'Part one.' })
      .expect(202);
    const taskId = first.body.task.id as string;
    expect(first.body.task.title).toBe('Part one.');
    await new Promise((r) => setTimeout(r, 20));
    const second = await postAs(t.http, tenant.testKey, `/staff/${staff.apiAddress}/trigger`)
      .send({ input: 'Part two.', subject: 'ignored for an existing thread', threadId: taskId })
      .expect(202);
    expect(second.body.task).toMatchObject({
      id: taskId,
      title: 'Part one.',
      createdAt: first.body.task.createdAt,
    });
    expect(Date.parse(second.body.task.updatedAt)).toBeGreaterThan(Date.parse(first.body.task.updatedAt));
    const messages = await t.http
      .get(api(`/tasks/${taskId}/messages`))
      .set(bearer(tenant.testKey))
      .expect(200);
    expect(messages.body.data.map((m: { text: string }) => m.text)).toEqual(['Part one.', 'Part two.']);

    const foreign = await postAs(t.http, other.testKey, '/tasks').send({ input: 'theirs' }).expect(202);
    const res = await postAs(t.http, tenant.testKey, `/staff/${staff.apiAddress}/trigger`)
      .send({ input: 'x', threadId: foreign.body.task.id })
      .expect(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('answers channel_route_not_found for an address that is off, inactive, unknown or of another workspace', async () => {
    const off = await createStaff(tenant.workspaceId, 'Off', false);
    const retired = await createStaff(tenant.workspaceId, 'Retired', true);
    await setStaffStatus(t.deps.pool, retired.id, 'inactive');
    const foreign = await createStaff(other.workspaceId, 'Foreign', true);
    const addresses = [
      (await staffRow(off.id)).api_address,
      retired.apiAddress!,
      foreign.apiAddress!,
      'stf_doesnotexist00000000000',
      'not-even-an-address',
    ];
    for (const address of addresses) {
      const res = await postAs(t.http, tenant.testKey, `/staff/${address}/trigger`).send({ input: 'x' });
      expect({ address, status: res.status, code: res.body.error?.code }).toEqual({
        address,
        status: 404,
        code: 'channel_route_not_found',
      });
    }
    // Switching the channel on makes the same address reachable.
    await setStaffApiChannel(t.deps.pool, off.id, true);
    await postAs(t.http, tenant.testKey, `/staff/${addresses[0]}/trigger`).send({ input: 'x' }).expect(202);
  });

  it('validates the body', async () => {
    const staff = await createStaff(tenant.workspaceId, 'Strict', true);
    for (const body of [
      {},
      { input: '' },
      { input: 'x', subject: 's'.repeat(201) },
      { input: 'x', extra: 1 },
    ]) {
      const res = await postAs(t.http, tenant.testKey, `/staff/${staff.apiAddress}/trigger`)
        .send(body)
        .expect(422);
      expect(res.body.error.code).toBe('invalid_request_body');
    }
  });
});
