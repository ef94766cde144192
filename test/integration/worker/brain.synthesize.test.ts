import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { legacyScryptHash } from '../../../shared/auth/passwords.ts';
import { insertMember } from '../../../shared/db/queries/members.ts';
import { createApiKey, unrestricted } from '../../../shared/keys/mintKeys.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { admin } from '../../helpers/cli.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from '../api/tasks.helpers.ts';
import {
  finishedTask,
  pendingSyntheses,
  search,
  waitForCurrentPage,
  waitForReplies,
} from './brain.helpers.ts';

// Long enough that a burst of three replies (test-key fixtures, milliseconds each) ends inside it.
const debounceMs = 3_000;

let t: TestContext;
let tenant: Tenant;
/** A workspace of its own for the ranking test, whose two tasks are synthesised while the tests before it run. */
let ranking: { key: string; tasks: Promise<[string, string]> };

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({
    env: { BRAIN_SYNTHESIS_DEBOUNCE_MS: String(debounceMs) },
    worker: true,
  }));
  const { testKey } = await createTenant(t.deps.pool);
  const tasks = Promise.all([
    finishedTask(
      t,
      testKey,
      'Espresso machine maintenance',
      'Descale the espresso machine every month and replace the espresso gasket each year.',
    ),
    finishedTask(
      t,
      testKey,
      'Kitchen rota',
      'The kitchen rota lists who cleans the fridge. Someone also wipes the espresso machine.',
    ),
  ]);
  // Awaited by its test, which reports a failure; until then it must not count as unhandled.
  tasks.catch(() => undefined);
  ranking = { key: testKey, tasks };
});
afterAll(() => t.close());

/** A second member of the tenant's workspace, with a key of their own. */
async function colleagueKey(): Promise<{ memberId: string; secret: string }> {
  const member = await insertMember(t.deps.pool, {
    id: newId('mem'),
    workspaceId: tenant.workspaceId,
    email: `colleague-${newId('x').toLowerCase()}@example.com`,
    passwordHash: legacyScryptHash('correct horse battery'),
    hasDeveloperAccess: true,
  });
  const key = await t.deps.pool.transaction((tx) =>
    createApiKey(tx, {
      workspaceId: tenant.workspaceId,
      memberId: member.id,
      projectIds: [tenant.projectId],
      livemode: false,
      name: 'Colleague',
      ...unrestricted(),
    }),
  );
  return { memberId: member.id, secret: key.secret };
}

describe('brain__synthesize (local provider)', () => {
  let taskId: string;

  it('writes a page from a finished task, labelled as an extractive summary', async () => {
    taskId = await finishedTask(
      t,
      tenant.testKey,
      'Kathmandu office forecast',
      'Prepare the quarterly revenue forecast for the Kathmandu office. Revenue grew eleven percent last quarter.',
    );
    const page = await waitForCurrentPage(t, taskId);
    expect(page).toMatchObject({
      title: 'Kathmandu office forecast',
      slug: 'kathmandu-office-forecast',
      revision: 1,
    });
    expect(page.body).toMatch(/^Extractive summary \(sentences taken from the task/);
    expect(page.body).toContain('Revenue grew eleven percent last quarter.');
    const hits = await search(t, tenant.testKey, 'quarterly revenue forecast');
    expect(hits[0]).toMatchObject({ pageId: page.id, slug: page.slug, title: page.title });
    expect(hits[0]!.snippet).toMatch(/revenue/i);
  });

  it('a misspelt query still finds the page', async () => {
    const page = await waitForCurrentPage(t, taskId);
    const hits = await search(t, tenant.testKey, 'quartely revnue kathmandoo');
    expect(hits.map((h) => h.pageId)).toContain(page.id);
    expect(hits[0]!.pageId).toBe(page.id);
    expect(hits[0]!.snippet.length).toBeGreaterThan(0);
  });

  it('a burst of messages makes one synthesis, updating the page in place', async () => {
    const before = await waitForCurrentPage(t, taskId);
    for (const text of [
      'Add the Pokhara office too.',
      'Use the exchange rate of the last day of the quarter.',
      'Finally, mention the monsoon slowdown in the summary.',
    ]) {
      await postAs(t.http, tenant.testKey, `/tasks/${taskId}/messages`).send({ input: text }).expect(202);
    }
    await waitForReplies(t, tenant.testKey, taskId, 8);
    // Every reply end re-keyed the same job: one synthesis waits, not three.
    const pending = await pendingSyntheses(t, taskId);
    expect(pending).toHaveLength(1);
    const after = await waitForCurrentPage(t, taskId);
    await waitUntil(async () => ((await pendingSyntheses(t, taskId)).length === 0 ? true : undefined));
    const settled = await waitForCurrentPage(t, taskId);
    expect(settled.revision).toBe(before.revision + 1);
    expect(after).toMatchObject({ id: before.id, slug: before.slug });
    expect(settled.body).not.toBe(before.body);
    expect(settled.body).toContain('Add the Pokhara office too.');
  });

  it('a task page is seen by the members who may see the task, and by nobody else', async () => {
    const colleague = await colleagueKey();
    const outsider = await createTenant(t.deps.pool);
    const page = await waitForCurrentPage(t, taskId);
    // The colleague may read the task (any member of its workspace may), so sees its page too.
    await t.http
      .get(api(`/tasks/${taskId}`))
      .set(bearer(colleague.secret))
      .expect(200);
    expect((await search(t, colleague.secret, 'kathmandu forecast')).map((h) => h.pageId)).toContain(page.id);
    // Another workspace's member may not read the task, nor find its page.
    await t.http
      .get(api(`/tasks/${taskId}`))
      .set(bearer(outsider.testKey))
      .expect(404);
    expect(await search(t, outsider.testKey, 'kathmandu forecast')).toEqual([]);
    expect(await search(t, outsider.testKey, 'kathmandoo forcast')).toEqual([]);

    // An operator page private to the first member: they see it, their colleague does not.
    const out = await admin(
      [
        'brain',
        'add-page',
        '--workspace',
        tenant.workspaceId,
        '--title',
        'Kathmandu salary bands',
        '--body',
        'Salary bands for the Kathmandu office.',
        '--private-to',
        tenant.memberId,
      ],
      { DATABASE_URL: t.databaseUrl },
    );
    expect(out.code).toBe(0);
    const privateId = (out.stdout as { page: { id: string } }).page.id;
    expect((await search(t, tenant.testKey, 'kathmandu salary')).map((h) => h.pageId)).toContain(privateId);
    expect((await search(t, colleague.secret, 'kathmandu salary')).map((h) => h.pageId)).not.toContain(
      privateId,
    );
  });

  it('ranks the best match first, exact and misspelt', async () => {
    const [taskA, taskB] = await ranking.tasks;
    const [a, b] = [await waitForCurrentPage(t, taskA), await waitForCurrentPage(t, taskB)];
    for (const query of ['espresso machine', 'expresso machin']) {
      const hits = await search(t, ranking.key, query);
      expect(hits.map((h) => h.pageId)).toEqual([a.id, b.id]);
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    }
  });

  it('answers queries of operators, quotes, stop words and the maximum length without error', async () => {
    for (const query of ['the', `"'\\:*&|!()<->`, 'kathmandoo\\ & | !forcast', 'word '.repeat(400).trim()]) {
      const hits = await search(t, tenant.testKey, query);
      expect(Array.isArray(hits)).toBe(true);
    }
    // A negated word stays negated when the others are corrected.
    const kept = await search(t, tenant.testKey, 'kathmandoo -bands');
    const dropped = await search(t, tenant.testKey, 'kathmandoo -forecast');
    expect(kept.map((h) => h.title)).toContain('Kathmandu office forecast');
    expect(dropped.map((h) => h.title)).not.toContain('Kathmandu office forecast');
    expect(dropped.map((h) => h.title)).toContain('Kathmandu salary bands');
  });

  it('answers invalid_request_body for bad bodies', async () => {
    for (const body of [
      {},
      { query: '' },
      { query: 7 },
      { query: 'x'.repeat(2001) },
      { query: 'a', extra: 1 },
    ]) {
      const res = await postAs(t.http, tenant.testKey, '/brain/search').send(body).expect(422);
      expect(res.body.error.code).toBe('invalid_request_body');
    }
  });
});
