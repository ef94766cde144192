import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { admin, cliArgs } from '../../helpers/cli.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenantForCli } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let env: Record<string, string>;

type Json = Record<string, Record<string, string>>;

/** brain add-page through the CLI: in the tenant's workspace unless another is named. */
async function addPage(
  title: string,
  body: string,
  options: { workspace?: string; privateTo?: string } = {},
): Promise<{ id: string; slug: string }> {
  const { workspace = tenant.workspaceId, privateTo } = options;
  const out = await admin(
    cliArgs('brain add-page', { workspace, title, body, 'private-to': privateTo }),
    env,
  );
  expect(out.code).toBe(0);
  return (out.stdout as Json).page as { id: string; slug: string };
}

/** member create through the CLI: another member of the tenant's workspace; its id. */
async function addMember(email: string): Promise<string> {
  const out = await admin(
    cliArgs('member create', { workspace: tenant.workspaceId, email, password: 'longenough' }),
    env,
  );
  return (out.stdout as Json).member!.id!;
}

/** POST /brain/search with `body`, as `key`. */
const postSearch = (key: string, body: Record<string, unknown>) =>
  postAs(t.http, key, '/brain/search').send(body);

beforeAll(async () => ({ t, tenant, env } = await contextWithTenantForCli()));
afterAll(() => t.close());

describe('brain add-page (CLI) and POST /brain/search', () => {
  it('ranks matching pages best first, with snippets, across English forms', async () => {
    const handbook = await addPage(
      'Refund policy',
      'Customers can request refunds within 30 days of purchase. Refunds are paid to the original card.',
    );
    expect(handbook.slug).toBe('refund-policy');
    const again = await addPage('Old notes', 'An older draft mentions refunding orders.');
    await addPage('Office plants', 'Water the ficus on Mondays.');
    const plants = await addPage('Office plants', 'And the cactus never.');
    expect(plants.slug).toBe('office-plants-2');

    const res = await postSearch(tenant.testKey, { query: 'refund' }).expect(200);
    expect(res.body.results.map((r: { pageId: string }) => r.pageId)).toEqual([handbook.id, again.id]);
    const [best, second] = res.body.results as {
      score: number;
      snippet: string;
      title: string;
      slug: string;
    }[];
    expect(best).toMatchObject({
      slug: 'refund-policy',
      title: 'Refund policy',
      snippet: expect.stringContaining('refunds'),
    });
    expect(second!.snippet).toContain('refunding');
    expect(best!.score).toBeGreaterThan(second!.score);
    const none = await postSearch(tenant.testKey, { query: 'submarine' }).expect(200);
    expect(none.body.results).toEqual([]);
  });

  it("limits results to what the key's creator may see and to the key's workspace", async () => {
    const other = await createTenant(t.deps.pool);
    const colleagueId = await addMember('colleague@example.com');
    const mine = await addPage('Salary bands', 'Quarterly compensation review notes.', {
      privateTo: tenant.memberId,
    });
    await addPage('Salary review', 'Compensation notes for one person.', { privateTo: colleagueId });
    await addPage('Compensation elsewhere', 'compensation', { workspace: other.workspaceId });
    const res = await postSearch(tenant.testKey, { query: 'compensation' }).expect(200);
    expect(res.body.results.map((r: { pageId: string }) => r.pageId)).toEqual([mine.id]);
  });

  it("corrects a misspelt word only from words of pages the caller may see, never a colleague's private ones", async () => {
    const spellerId = await addMember('speller@example.com');
    const spellerKey = await tenant.key({ memberId: spellerId, livemode: false });
    // Made-up words English stemming leaves alone, all at the same trigram distance from "zorbolt":
    // the nearest three (ties by spelling) are the private ones.
    const shared = await addPage('Harbour log', 'The zorbult is moored.');
    const secret = await addPage('Private notes', 'zorbalt zorbelt zorbilt', { privateTo: tenant.memberId });
    const search = async (secretKey: string, query: string) => {
      const res = await postSearch(secretKey, { query });
      expect(res.status).toBe(200);
      return (res.body.results as { pageId: string }[]).map((r) => r.pageId);
    };
    // The colleague misspells a private word: corrected to the word of the page they may see.
    expect(await search(spellerKey.secret, 'zorbolt')).toEqual([shared.id]);
    // The private word itself is not in their vocabulary either (it would go uncorrected, find
    // nothing, and so tell them that some page they cannot see has it).
    expect(await search(spellerKey.secret, 'zorbilt')).toEqual([shared.id]);
    // The page's owner is corrected to her own private words as before.
    expect(await search(tenant.testKey, 'zorbolt')).toContain(secret.id);
  });

  it('validates the query and the scope, and meters nothing', async () => {
    const empty = await postSearch(tenant.testKey, { query: '' }).expect(422);
    expect(empty.body.error.code).toBe('invalid_request_body');
    const narrow = await tenant.key({ scopeLevel: 'package', packages: ['text'] });
    const denied = await postSearch(narrow.secret, { query: 'x' }).expect(403);
    expect(denied.body.error.code).toBe('api_key_operation_scope');
    const bad = await admin(
      cliArgs('brain add-page', {
        workspace: tenant.workspaceId,
        title: 'x',
        body: 'y',
        'private-to': 'mem_nope',
      }),
      env,
    );
    expect((bad.stderr as Json).error!.code).toBe('not_found');
  });
});
