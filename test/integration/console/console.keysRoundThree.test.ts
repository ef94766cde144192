import { mkdir } from 'node:fs/promises';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { z } from 'zod';

import { loadApiDocument } from '../../../api/openapi/document.ts';
import { sql } from '../../../shared/db/sql.ts';
import { rollApiKey } from '../../../shared/keys/mintKeys.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { launchChromium } from '../../../worker/render/chromium.ts';
import { axeViolations } from '../../helpers/axe.ts';
import { type Harness, password, startHarness } from '../oauth/harness.ts';

// Issue 38, the keys half, in the bundled Chromium at a desktop and a phone size: a revoked key's
// row says only that it is revoked; a refused key form keeps what was typed with each error at its
// field; the spend cap is typed in the currency's major unit; the scope chooser shows a level's
// choices only while it is chosen; revoked keys sit apart and mode and state are badges. Every
// keys page has no axe violation of any impact, and a screenshot of each lands in test/artifacts/pages/.
let h: Harness;
let browser: Browser;
const artifacts = 'test/artifacts/pages';
const sizes = [
  ['desktop', { width: 1280, height: 800 }],
  ['phone', { width: 390, height: 844 }],
] as const;

const { packages, scopes } = loadApiDocument();
const staffStatus = async (secret: string) =>
  (await fetch(`${h.base}/api/pub/v1/staff`, { headers: { authorization: `Bearer ${secret}` } })).status;
const text = async (page: Page, selector: string) =>
  ((await page.locator(selector).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
const keyByName = (name: string) =>
  h.t.deps.pool.maybeOne(sql.type(
    z.object({ id: z.string(), monthly_spend_cap_minor: z.number().nullable() }),
  )`
    select id, monthly_spend_cap_minor from api_keys where workspace_id = ${h.tenant.workspaceId} and name = ${name}
  `);

/** Seeded once for both sizes: a key in each state the table tells apart. */
const seeded = { rolling: 'Rolling key', expiring: 'Expiring key', revoked: 'Revoked long ago' };

beforeAll(async () => {
  await mkdir(artifacts, { recursive: true });
  h = await startHarness();
  const rolling = await h.tenant.key({ livemode: true, name: seeded.rolling });
  await rollApiKey(h.t.deps.pool, {
    keyId: rolling.id,
    workspaceId: h.tenant.workspaceId,
    livemode: true,
    overlapMs: 3_600_000,
    now: Date.now(),
  });
  await h.tenant.key({
    livemode: false,
    name: seeded.expiring,
    expiresAt: new Date(Date.now() + 2 * 86_400_000).toISOString(),
  });
  const revoked = await h.tenant.key({ livemode: false, name: seeded.revoked });
  await h.t.deps.pool.query(sql.typeAlias('void')`
    update api_keys set revoked_at = now() - interval '1 day', revoked_by = ${h.tenant.memberId}
    where id = ${revoked.id}
  `);
  ({ browser } = await launchChromium({ logger: createLogger('silent', 'test-browser'), network: true }));
});
afterAll(async () => {
  await browser?.close();
  await h.close();
});

describe.each(sizes)('the keys pages at %s size', (size, viewport) => {
  let context: BrowserContext;
  let page: Page;
  const base = () => `${h.base}/console/${h.tenant.memberId}`;

  /** axe-core finds no violation of any impact; nothing scrolls sideways; a screenshot is saved. */
  async function checkPage(name: string): Promise<void> {
    expect(
      (await axeViolations(page)).map(
        (v) => `${name}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
      ),
    ).toEqual([]);
    const [scrollWidth, innerWidth] = (await page.evaluate(
      '[document.documentElement.scrollWidth, window.innerWidth]',
    )) as number[];
    expect({ name, fits: scrollWidth! <= innerWidth! }).toEqual({ name, fits: true });
    await page.screenshot({ path: `${artifacts}/${name}-${size}.png`, fullPage: true });
  }

  /** Submits the key form and waits for its answer: the status the server gave. */
  async function submitKeyForm(): Promise<number> {
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/keys')),
      page.getByRole('button', { name: 'Create key' }).click(),
    ]);
    await page.waitForLoadState();
    return response.status();
  }

  beforeAll(async () => {
    context = await browser.newContext({ viewport });
    page = await context.newPage();
    await page.goto(`${h.base}/console`);
    await page.fill('#email', h.email);
    await page.fill('#password', password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base()}/keys`);
  });
  afterAll(() => context?.close());

  it('1. a rolled, then revoked key says only that it is revoked, when and by whom; both secrets answer 401', async () => {
    const key = await h.tenant.key({ livemode: false, name: `Rolled then revoked ${size}` });
    await page.goto(`${base()}/keys`);
    await page.getByRole('link', { name: `Roll Rolled then revoked ${size}…` }).click();
    await checkPage('key-roll-confirm-own');
    await page.fill('#overlap', '3600');
    await page.getByRole('button', { name: /^Roll / }).click();
    const rolled = await page.locator('#secret').inputValue();
    expect(await staffStatus(rolled)).toBe(200);
    expect(await staffStatus(key.secret)).toBe(200);
    await page.goto(`${base()}/keys`);
    await page.getByRole('link', { name: `Revoke Rolled then revoked ${size}…` }).click();
    await checkPage('key-revoke-confirm-rolled');
    await page.getByRole('button', { name: /^Revoke / }).click();
    await page.waitForURL(/done=key-revoked/);
    expect(await staffStatus(rolled)).toBe(401);
    expect(await staffStatus(key.secret)).toBe(401);
    const row = await text(page, `tr[data-key="${key.id}"]`);
    expect(row).toMatch(/revoked \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC by you$/);
    expect(row).not.toMatch(/works|until|active|rolling/i);
    // The row stands in the revoked keys' table, after the heading that sets them apart.
    await expect(page.locator(`#revoked ~ .table-wrap tr[data-key="${key.id}"]`).count()).resolves.toBe(1);
    await checkPage('keys-after-revoke');
  }, 60_000);

  it('3. a refused form keeps every value typed and shows each error at its field', async () => {
    const name = `Keeps what was typed ${size}`;
    await page.goto(`${base()}/keys/new`);
    await page.fill('#name', name);
    await page.check('input[name=mode][value=live]');
    await page.check('#scope-operation');
    await page.check('input[name=operations][value="staff.list"]');
    await page.check('input[name=operations][value="text.generate"]');
    await page.fill('#expires_at', '2031-05-04T03:02');
    await page.fill('#ip_allowlist', '203.0.113.0/24, 300.1.2.3/40');
    await page.fill('#cap', '12.345');
    expect(await submitKeyForm()).toBe(400);
    expect(page.url()).toBe(`${base()}/keys`);
    expect(await keyByName(name)).toBeNull();
    expect(await page.title()).toBe('Error: Create an API key');
    // Every value as typed.
    await expect(page.locator('#name').inputValue()).resolves.toBe(name);
    await expect(page.locator('input[name=mode][value=live]').isChecked()).resolves.toBe(true);
    await expect(page.locator('#scope-operation').isChecked()).resolves.toBe(true);
    const ticked = await page
      .locator('input[name=operations]:checked')
      .evaluateAll((els) => els.map((e) => e.getAttribute('value')));
    expect(ticked.toSorted()).toEqual(['staff.list', 'text.generate']);
    await expect(
      page.locator(`input[name=projects][value="${h.tenant.projectId}"]`).isChecked(),
    ).resolves.toBe(true);
    await expect(page.locator('#expires_at').inputValue()).resolves.toBe('2031-05-04T03:02');
    await expect(page.locator('#ip_allowlist').inputValue()).resolves.toBe('203.0.113.0/24, 300.1.2.3/40');
    await expect(page.locator('#cap').inputValue()).resolves.toBe('12.345');
    // Each error at its field: the summary links to the field, which is invalid and described by it.
    const summary = page.locator('.error-summary');
    await expect(summary.getAttribute('role')).resolves.toBe('alert');
    await expect(
      summary.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href'))),
    ).resolves.toEqual(['#ip_allowlist', '#cap']);
    for (const [id, says] of [
      ['ip_allowlist', 'Not a CIDR: 300.1.2.3/40.'],
      ['cap', 'USD has 2 decimals at most, like 50 or 50.00.'],
    ] as const) {
      const field = page.locator(`#${id}`);
      await expect(field.getAttribute('aria-invalid')).resolves.toBe('true');
      const describedBy = (await field.getAttribute('aria-describedby'))!.split(' ');
      expect(describedBy).toContain(`${id}-error`);
      await expect(text(page, `#${id}-error`)).resolves.toBe(`Error: ${says}`);
      await expect(summary.locator(`a[href="#${id}"]`).textContent()).resolves.toBe(says);
    }
    await expect(page.locator('#name').getAttribute('aria-invalid')).resolves.toBeNull();
    await checkPage('key-new-refused');
    // Fixed where the errors said, the same form creates the key.
    await page.fill('#ip_allowlist', '203.0.113.0/24');
    await page.fill('#cap', '12.34');
    expect(await submitKeyForm()).toBe(303);
    await page.waitForURL(/\/reveal\//);
    expect((await keyByName(name))?.monthly_spend_cap_minor).toBe(1234);
  }, 60_000);

  it('4. a spend cap typed as 50 stores 5000 minor units; a negative or junk cap is refused at its field', async () => {
    await page.goto(`${base()}/keys/new`);
    await expect(text(page, 'label[for=cap]')).resolves.toBe('Monthly spend cap in USD (optional)');
    await expect(text(page, '.amount-currency')).resolves.toBe('USD');
    for (const [typed, says] of [
      ['-5', 'The amount cannot be negative.'],
      ['fifty', 'Enter an amount in USD, like 50 or 50.00.'],
    ] as const) {
      await page.fill('#name', `Refused cap ${size}`);
      await page.fill('#cap', typed);
      expect(await submitKeyForm()).toBe(400);
      await expect(page.locator('#cap').inputValue()).resolves.toBe(typed);
      await expect(text(page, '#cap-error')).resolves.toBe(`Error: ${says}`);
    }
    expect(await keyByName(`Refused cap ${size}`)).toBeNull();
    const name = `Fifty dollar cap ${size}`;
    await page.fill('#name', name);
    await page.fill('#cap', '50');
    await submitKeyForm();
    await page.waitForURL(/\/reveal\//);
    const key = await keyByName(name);
    expect(key?.monthly_spend_cap_minor).toBe(5000);
    await page.goto(`${base()}/keys`);
    await expect(text(page, `tr[data-key="${key!.id}"] td[data-label="Spend this month"]`)).resolves.toBe(
      '0.00 USD of 50.00 USD',
    );
  }, 60_000);

  it('6. the scope chooser shows no choice for the whole API, the packages or the operations when asked, by keyboard too', async () => {
    await page.goto(`${base()}/keys/new`);
    const visible = async () => ({
      packages: await page.locator('input[name=packages]:visible').count(),
      operations: await page.locator('input[name=operations]:visible').count(),
    });
    await expect(page.locator('#scope-app').isChecked()).resolves.toBe(true);
    expect(await visible()).toEqual({ packages: 0, operations: 0 });
    await checkPage('key-new-whole-api');
    // Arrow keys move between the levels, as with any radio group; each level shows its own choices.
    await page.focus('#scope-app');
    await page.keyboard.press('ArrowDown');
    await expect(page.locator('#scope-package').isChecked()).resolves.toBe(true);
    expect(await visible()).toEqual({ packages: packages.length, operations: 0 });
    await checkPage('key-new-packages');
    // Tab goes from the chosen level into its choices.
    await page.keyboard.press('Tab');
    await expect(page.evaluate('document.activeElement.name')).resolves.toBe('packages');
    await page.focus('#scope-package');
    await page.keyboard.press('ArrowDown');
    await expect(page.locator('#scope-operation').isChecked()).resolves.toBe(true);
    expect(await visible()).toEqual({ packages: 0, operations: scopes.length });
    await checkPage('key-new-operations');
    // A screen reader hears the group by its legend, and never the hidden level's choices.
    const tree = await page.locator('main form').ariaSnapshot();
    expect(tree).toContain(`group "Operations (${scopes.length})"`);
    expect(tree).not.toContain('Packages (');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    await expect(page.locator('#scope-app').isChecked()).resolves.toBe(true);
    expect(await visible()).toEqual({ packages: 0, operations: 0 });
  }, 60_000);

  it('9. revoked keys sit apart below the working ones; mode and state are badges; no red button on a row', async () => {
    await page.goto(`${base()}/keys`);
    const badges = async (name: string) =>
      page
        .locator('tr', { hasText: name })
        .locator('.badge')
        .evaluateAll((els) => els.map((e) => `${e.className.replace('badge ', '')}:${e.textContent}`));
    expect(await badges(seeded.rolling)).toEqual(['neutral:live', 'success:active', 'warning:rolling']);
    expect(await badges(seeded.expiring)).toEqual(['warning:test', 'success:active', 'warning:expiring']);
    expect(await badges(seeded.revoked)).toEqual(['warning:test', 'danger:revoked']);
    // The working keys' table holds no revoked key; the revoked keys' table, under its heading, only those.
    const tables = page.locator('table');
    await expect(tables.count()).resolves.toBe(2);
    await expect(tables.nth(0).locator('.badge.danger', { hasText: 'revoked' }).count()).resolves.toBe(0);
    await expect(tables.nth(1).locator('tbody tr').count()).resolves.toBe(
      await tables.nth(1).locator('.badge.danger', { hasText: 'revoked' }).count(),
    );
    await expect(page.locator('#revoked + p + .table-wrap table').count()).resolves.toBe(1);
    const top = async (locator: ReturnType<Page['locator']>) => (await locator.boundingBox())!.y;
    expect(await top(tables.nth(1))).toBeGreaterThan(await top(tables.nth(0)));
    // Revoke is a quiet link to its confirmation page, in the danger colour's word only.
    await expect(page.locator('tr .button.danger, tr button.danger').count()).resolves.toBe(0);
    const revoke = page.locator('tr', { hasText: seeded.expiring }).getByRole('link', { name: /^Revoke / });
    await expect(revoke.getAttribute('href')).resolves.toMatch(/\/keys\/key_\w+\/revoke$/);
    // Badge colours come from the tokens (so a dark scheme's values apply).
    const colours = (await page.evaluate(`(() => {
      const root = getComputedStyle(document.documentElement);
      const probe = document.createElement('span');
      probe.style.color = root.getPropertyValue('--color-danger');
      document.body.append(probe);
      const expected = getComputedStyle(probe).color;
      probe.remove();
      return { badge: getComputedStyle(document.querySelector('.badge.danger')).color, expected };
    })()`)) as { badge: string; expected: string };
    expect(colours.badge).toBe(colours.expected);
    await checkPage('keys-states');
  }, 60_000);
});
