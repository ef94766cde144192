import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { CliError } from '../../../cli/cliError.ts';
import { admin } from '../../helpers/cli.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

const staffStatus = async (secret: string) => (await t.http.get(api('/staff')).set(bearer(secret))).status;

describe('admin key roll', () => {
  // The overlap outlasts the CLI's exit and two requests on a busy machine.
  it('prints a new secret; the old one works until the overlap ends, then is refused', async () => {
    const key = await tenant.key({ livemode: false, name: 'Rolled' });
    const out = await admin(['key', 'roll', '--key', key.id, '--overlap', '5'], {
      DATABASE_URL: t.databaseUrl,
    });
    expect(out.code).toBe(0);
    const rolled = (out.stdout as { key: { id: string; secret: string; previousSecretUntil: string } }).key;
    expect(rolled.id).toBe(key.id);
    expect(rolled.secret).toMatch(/^svc_sk_test_/);
    expect(await staffStatus(rolled.secret)).toBe(200);
    expect(await staffStatus(key.secret)).toBe(200);
    await new Promise((resolve) =>
      setTimeout(resolve, Date.parse(rolled.previousSecretUntil) - Date.now() + 100),
    );
    expect(await staffStatus(key.secret)).toBe(401);
    expect(await staffStatus(rolled.secret)).toBe(200);
  });

  it('refuses an overlap past 24 h, and revoked or unknown keys', async () => {
    const key = await tenant.key({ name: 'Other' });
    const run = async (values: Record<string, string>) => {
      try {
        await commands['key roll']!.run(t.deps.pool, values);
        return 'ok';
      } catch (error) {
        if (error instanceof CliError) return error.code;
        throw error;
      }
    };
    expect(await run({ key: key.id, overlap: '86401' })).toBe('invalid_arguments');
    expect(await run({ key: 'key_nope' })).toBe('not_found');
    await commands['key revoke']!.run(t.deps.pool, { key: key.id });
    expect(await run({ key: key.id })).toBe('not_found');
  });
});
