import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { CliError } from '../../../cli/cliError.ts';
import { admin } from '../../helpers/cli.ts';
import { atTime } from '../../helpers/clock.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

/** Every fake-able timer but Date. */
const staffStatus = async (secret: string) => (await t.http.get(api('/staff')).set(bearer(secret))).status;

describe('admin key roll', () => {
  it('prints a new secret; the old one works until the overlap ends, then is refused', async () => {
    const key = await tenant.key({ livemode: false, name: 'Rolled' });
    const rolledAt = Date.now();
    const out = await admin(['key', 'roll', '--key', key.id, '--overlap', '600'], {
      DATABASE_URL: t.databaseUrl,
    });
    expect(out.code).toBe(0);
    const rolled = (out.stdout as { key: { id: string; secret: string; previousSecretUntil: string } }).key;
    expect(rolled.id).toBe(key.id);
    expect(rolled.secret).toMatch(/^svc_sk_test_/);
    const until = Date.parse(rolled.previousSecretUntil);
    expect(until).toBeGreaterThanOrEqual(rolledAt + 600_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
    expect(await staffStatus(key.secret)).toBe(200);
    expect(await staffStatus(rolled.secret)).toBe(200);
    // The api runs in this process and checks a secret's end against its own clock: move that clock.
    await atTime(until + 1000, async () => {
      expect(await staffStatus(key.secret)).toBe(401);
      expect(await staffStatus(rolled.secret)).toBe(200);
    });
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
