import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

import type { AxeResults, Result, RunOptions } from 'axe-core';
import type { Page } from 'playwright-core';

const require = createRequire(import.meta.url);
/** The page's globals these calls use (this project's types carry no DOM). */
type InPage = {
  document: unknown;
  axe: { run: (context: unknown, options: RunOptions) => Promise<AxeResults> };
};
let source: Promise<string> | undefined;

/**
 * axe-core's violations on the page as it is now (all rules, or those `options` choose).
 *
 * @axe-core/playwright's analyze() sent the 650 KB axe-core source into every frame and a fresh
 * blank page on each call (runPartial per frame, finishRun in the blank page); most of a console
 * test's time went there. Here the source goes into a document once (a navigation drops it) and
 * axe.run does the same checks in place. page.evaluate runs through CDP, so the console's CSP
 * does not apply. Only violations are collected: passing nodes are never looked at by callers.
 */
export async function axeViolations(page: Page, options: RunOptions = {}): Promise<Result[]> {
  source ??= readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate('typeof window.axe?.run === "function"'))) {
    await page.evaluate(await source);
  }
  const results = await page.evaluate(
    (runOptions) => {
      const { axe, document } = globalThis as unknown as InPage;
      return axe.run(document, runOptions);
    },
    { ...options, resultTypes: ['violations'] } satisfies RunOptions,
  );
  return results.violations;
}
