import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import { legacyScryptHash } from '../../../shared/auth/passwords.ts';
import { insertMember } from '../../../shared/db/queries/members.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import {
  FormClient,
  type Harness,
  inputValue,
  password,
  signInWith,
  startHarness,
} from '../oauth/harness.ts';

// Who may roll and who may revoke a key, through the console's own forms (no browser needed).
let h: Harness;
// A: the tenant's member, owner of the key. B: a colleague in the same workspace, also a developer.
let a: FormClient;
let b: FormClient;
let bId: string;
const bEmail = `colleague-${newId('x').toLowerCase()}@example.com`;

const keysPage = (memberId: string) => `/console/${memberId}/keys`;
const staffStatus = async (secret: string) =>
  (await fetch(`${h.base}/api/pub/v1/staff`, { headers: { authorization: `Bearer ${secret}` } })).status;
const secretOf = (page: string) => /id="secret"[^>]* value="([^"]+)"/.exec(page)?.[1];

async function signedIn(email: string): Promise<FormClient> {
  const client = new FormClient(h.base);
  const res = await signInWith(client, email);
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return client;
}

/** The key's secret columns as stored: a roll would change them. */
const storedSecret = (keyId: string) =>
  h.t.deps.pool.one(sql.type(
    z.object({ secret_hint: z.string(), has_previous: z.boolean(), revoked_by: z.string().nullable() }),
  )`
    select secret_hint, previous_secret_hash is not null as has_previous, revoked_by from api_keys
    where id = ${keyId}
  `);

beforeAll(async () => {
  h = await startHarness();
  bId = (
    await insertMember(h.t.deps.pool, {
      id: newId('mem'),
      workspaceId: h.tenant.workspaceId,
      email: bEmail,
      passwordHash: legacyScryptHash(password),
      hasDeveloperAccess: true,
    })
  ).id;
  a = await signedIn(h.email);
  b = await signedIn(bEmail);
});
afterAll(() => h.close());

describe("a colleague's key in the console", () => {
  it("cannot be rolled by a colleague: 404 as for a key that does not exist, and the owner's secret is unchanged", async () => {
    const aKey = await h.tenant.key({ livemode: false, name: 'Owner key' });
    const before = await storedSecret(aKey.id);
    const list = await b.get(keysPage(bId));
    expect(list.status).toBe(200);
    const csrf = inputValue(list.text, '_csrf');
    const roll = await b.post(`${keysPage(bId)}/${aKey.id}/roll`, { _csrf: csrf, overlap_seconds: '86400' });
    const missing = await b.post(`${keysPage(bId)}/key_nope/roll`, { _csrf: csrf, overlap_seconds: '86400' });
    expect(roll.status).toBe(404);
    expect(roll).toEqual(missing);
    expect(roll.text).not.toMatch(/svc_sk_/);
    expect(await storedSecret(aKey.id)).toEqual(before);
    expect(before.has_previous).toBe(false);
    expect(await staffStatus(aKey.secret)).toBe(200);
    // B sees A's key and may revoke it, but is offered no roll.
    expect(list.text).toContain(`data-key="${aKey.id}"`);
    expect(list.text).not.toContain(`/keys/${aKey.id}/roll"`);
    expect(list.text).toContain(`/keys/${aKey.id}/revoke"`);
  });

  it('can be rolled by its owner, who alone is offered Roll', async () => {
    const aKey = await h.tenant.key({ livemode: false, name: 'Owner rolls' });
    const list = await a.get(keysPage(h.tenant.memberId));
    expect(list.text).toContain(`/keys/${aKey.id}/roll"`);
    const rolled = await a.post(`${keysPage(h.tenant.memberId)}/${aKey.id}/roll`, {
      _csrf: inputValue(list.text, '_csrf'),
      overlap_seconds: '0',
      confirm: 'yes',
    });
    // Post/redirect/get (issue 23): the roll answers 303 to a one-time page with the new secret.
    expect(rolled.status).toBe(303);
    const shown = await a.get(rolled.location!);
    expect(shown.status).toBe(200);
    const secret = secretOf(shown.text) ?? '';
    expect(secret).toMatch(/^svc_sk_test_/);
    expect(await staffStatus(secret)).toBe(200);
    expect(await staffStatus(aKey.secret)).toBe(401);
  });

  it('can be revoked by any developer of the workspace, recorded as theirs in the console and in `key list`', async () => {
    const aKey = await h.tenant.key({ livemode: true, name: 'Leaked key' });
    const list = await b.get(keysPage(bId));
    const revoked = await b.post(`${keysPage(bId)}/${aKey.id}/revoke`, {
      _csrf: inputValue(list.text, '_csrf'),
      confirm: 'yes',
    });
    expect(revoked.status).toBe(303);
    expect(await staffStatus(aKey.secret)).toBe(401);
    expect((await storedSecret(aKey.id)).revoked_by).toBe(bId);
    // Revoking again (the owner, later) keeps the first revoker.
    const ownList = await a.get(keysPage(h.tenant.memberId));
    await a.post(`${keysPage(h.tenant.memberId)}/${aKey.id}/revoke`, {
      _csrf: inputValue(ownList.text, '_csrf'),
      confirm: 'yes',
    });
    expect((await storedSecret(aKey.id)).revoked_by).toBe(bId);
    // The row's text, as read: its markup (badges) aside.
    const row = (page: string) =>
      new RegExp(`<tr data-key="${aKey.id}">[\\s\\S]*?</tr>`).exec(page)![0].replace(/<[^>]+>/g, ' ');
    const seenByA = row((await a.get(keysPage(h.tenant.memberId))).text).replace(/\s+/g, ' ');
    expect(seenByA).not.toMatch(/old secret|works until|active/);
    expect(seenByA).toMatch(new RegExp(`revoked \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC by ${bEmail}`));
    expect(seenByA).toContain('created by you');
    const seenByB = row((await b.get(keysPage(bId))).text).replace(/\s+/g, ' ');
    expect(seenByB).toContain('UTC by you');
    expect(seenByB).toContain(`created by ${h.email}`);
    const listed = (await commands['key list']!.run(h.t.deps.pool, {
      workspace: h.tenant.workspaceId,
      member: h.tenant.memberId,
    })) as { keys: { id: string; revokedBy: string | null }[] };
    expect(listed.keys.find((k) => k.id === aKey.id)!.revokedBy).toBe(bId);
  });
});

describe('the key form and the keys list, without a browser', () => {
  it('answers a refused form 400 with each problem at its field, what was typed, and no key', async () => {
    const page = await a.get(`${keysPage(h.tenant.memberId)}/new`);
    const before = await h.t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from api_keys where workspace_id = ${h.tenant.workspaceId}
    `);
    const refused = await a.post(keysPage(h.tenant.memberId), {
      _csrf: inputValue(page.text, '_csrf'),
      name: '',
      projects: h.tenant.projectId,
      mode: 'live',
      scope_level: 'package',
      ip_allowlist: '10.0.0.0/8',
      monthly_spend_cap: '7.5',
    });
    expect(refused.status).toBe(400);
    expect(refused.location).toBeNull();
    const summary = /<div class="error-summary"[\s\S]*?<\/div>/.exec(refused.text)![0];
    expect([...summary.matchAll(/href="#(\w+)"/g)].map((m) => m[1])).toEqual(['name', 'packages']);
    expect(refused.text).toMatch(/id="name"[^>]*aria-invalid="true"\s+aria-describedby="name-error"/);
    expect(refused.text).toMatch(/<fieldset[^>]*aria-describedby="packages-error"/);
    expect(refused.text).toMatch(/value="package"\s+id="scope-package"\s+checked/);
    const typed = (name: string) => new RegExp(`name="${name}"[^>]*value="([^"]*)"`).exec(refused.text)?.[1];
    expect(typed('ip_allowlist')).toBe('10.0.0.0/8');
    expect(typed('monthly_spend_cap')).toBe('7.5');
    const after = await h.t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from api_keys where workspace_id = ${h.tenant.workspaceId}
    `);
    expect(after).toBe(before);
  });

  it('shows an expired key as expired, never active', async () => {
    const key = await h.tenant.key({
      livemode: false,
      name: 'Expired key',
      expiresAt: '2020-01-01T00:00:00.000Z',
    });
    const list = await a.get(keysPage(h.tenant.memberId));
    const row = new RegExp(`<tr data-key="${key.id}">[\\s\\S]*?</tr>`).exec(list.text)![0];
    expect(row).toContain('<span class="badge danger">expired</span>');
    expect(row).not.toContain('active');
  });
});
