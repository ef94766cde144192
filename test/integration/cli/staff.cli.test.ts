import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { CliError } from '../../../cli/cliError.ts';
import { admin, cliArgs } from '../../helpers/cli.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenantForCli } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let env: Record<string, string>;

beforeAll(async () => ({ t, tenant, env } = await contextWithTenantForCli()));
afterAll(() => t.close());

/** Validation cases run the same command in-process (a process per case would cost a second or two each). */
async function errorOf(
  command: string,
  values: Record<string, string | boolean | undefined>,
  envOverride?: Record<string, string>,
) {
  const saved = { ...process.env };
  Object.assign(process.env, envOverride);
  try {
    await commands[command]!.run(t.deps.pool, values);
    return 'ok';
  } catch (error) {
    if (error instanceof CliError) return error.code;
    throw error;
  } finally {
    process.env = saved;
  }
}

describe('admin staff create / workflow create / webhook create', () => {
  it('staff create prints { staff: { id, apiAddress } }, the address only with --api-channel', async () => {
    const withChannel = await admin(
      cliArgs('staff create', {
        workspace: tenant.workspaceId,
        name: 'Ada',
        role: 'You answer billing questions.',
        'api-channel': true,
      }),
      env,
    );
    expect(withChannel).toMatchObject({
      code: 0,
      stdout: { staff: { id: expect.stringMatching(/^staff_/), apiAddress: expect.stringMatching(/^stf_/) } },
    });
    const without = await admin(
      cliArgs('staff create', { workspace: tenant.workspaceId, name: 'Bo', role: 'You file things.' }),
      env,
    );
    expect(without.stdout).toEqual({ staff: { id: expect.stringMatching(/^staff_/), apiAddress: null } });

    const staff = withChannel.stdout as { staff: { id: string; apiAddress: string } };
    const triggered = await postAs(t.http, tenant.testKey, `/staff/${staff.staff.apiAddress}/trigger`)
      .send({ input: 'Invoice 12 is wrong.' })
      .expect(202);
    expect(triggered.body.task.title).toBe('Invoice 12 is wrong.');
  });

  it('staff create refuses bad input with the CLI error codes', async () => {
    const missing = await admin(['staff', 'create', '--workspace', tenant.workspaceId, '--name', 'X'], env);
    expect(missing).toMatchObject({
      code: 1,
      stdout: null,
      stderr: { error: { code: 'invalid_arguments' } },
    });
    expect(await errorOf('staff create', { workspace: 'ws_nope', name: 'X', role: 'r' })).toBe('not_found');
    expect(await errorOf('staff create', { workspace: tenant.workspaceId, name: ' ', role: 'r' })).toBe(
      'invalid_arguments',
    );
    expect(
      await errorOf('staff create', { workspace: tenant.workspaceId, name: 'n'.repeat(201), role: 'r' }),
    ).toBe('invalid_arguments');
  });

  it('workflow create validates fields and template and prints { workflow: { id } }', async () => {
    const fields = JSON.stringify([{ key: 'topic', type: 'text', required: true }]);
    const ok = await admin(
      cliArgs('workflow create', {
        workspace: tenant.workspaceId,
        name: 'Brief',
        prompt: 'Write about {{topic}}.',
        fields,
      }),
      env,
    );
    expect(ok).toMatchObject({ code: 0, stdout: { workflow: { id: expect.stringMatching(/^wf_/) } } });
    const cases: [string, string, string][] = [
      ['not json', 'Hi', 'invalid_arguments'],
      [JSON.stringify([{ key: 'a', type: 'colour' }]), 'Hi', 'invalid_arguments'],
      [JSON.stringify([{ key: 'a', type: 'select', options: [] }]), 'Hi', 'invalid_arguments'],
      [JSON.stringify([{ key: 'a', type: 'number', min: 5, max: 1 }]), 'Hi', 'invalid_arguments'],
      [
        JSON.stringify([
          { key: 'a', type: 'text' },
          { key: 'a', type: 'text' },
        ]),
        'Hi',
        'invalid_arguments',
      ],
      [fields, 'About {{subject}}', 'invalid_arguments'],
    ];
    for (const [f, prompt, code] of cases) {
      const error = await errorOf('workflow create', {
        workspace: tenant.workspaceId,
        name: 'W',
        prompt,
        fields: f,
      });
      expect({ f, prompt, error }).toEqual({ f, prompt, error: code });
    }
    const unknownStaff = {
      workspace: tenant.workspaceId,
      name: 'W',
      prompt: 'Hi',
      fields: '[]',
      staff: 'staff_nope',
    };
    expect(await errorOf('workflow create', unknownStaff)).toBe('not_found');
  });

  it('webhook create prints { webhook: { id, secret } } and refuses private literal targets without the flag', async () => {
    const p = tenant.projectId;
    // Refused without WEBHOOK_ALLOW_PRIVATE, accepted with it.
    const privateTarget = { project: p, url: 'http://127.0.0.1:9/x', events: 'job.failed' };
    const ok = await admin(
      cliArgs('webhook create', {
        project: p,
        url: 'https://hooks.example.com/svc',
        events: 'task.message.created,job.failed',
      }),
      env,
    );
    expect(ok.stdout).toEqual({
      webhook: {
        id: expect.stringMatching(/^wh_/),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      },
    });
    const refused = await admin(cliArgs('webhook create', privateTarget), env);
    expect(refused).toMatchObject({
      code: 1,
      stderr: {
        error: { code: 'invalid_arguments', message: expect.stringContaining('WEBHOOK_ALLOW_PRIVATE') },
      },
    });
    const cases: [Record<string, string>, string][] = [
      [{ project: p, url: 'http://[::1]/x', events: 'job.failed' }, 'invalid_arguments'],
      [{ project: p, url: 'http://169.254.169.254/latest', events: 'job.failed' }, 'invalid_arguments'],
      [{ project: p, url: 'ftp://example.com/x', events: 'job.failed' }, 'invalid_arguments'],
      [{ project: p, url: 'https://user:pw@example.com/x', events: 'job.failed' }, 'invalid_arguments'],
      [{ project: p, url: 'https://example.com/x', events: 'task.deleted' }, 'invalid_arguments'],
      [{ project: p, url: 'https://example.com/x', events: '' }, 'invalid_arguments'],
      [{ project: 'prj_nope', url: 'https://example.com/x', events: 'job.failed' }, 'not_found'],
    ];
    for (const [values, code] of cases) {
      expect({ values, error: await errorOf('webhook create', values) }).toEqual({ values, error: code });
    }
    expect(await errorOf('webhook create', privateTarget, { WEBHOOK_ALLOW_PRIVATE: 'true' })).toBe('ok');
  });
});
