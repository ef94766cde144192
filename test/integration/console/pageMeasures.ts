import type { Page } from 'playwright-core';

// What a page looks like once laid out, measured in the browser (the scripts are strings: the
// project's TypeScript has no DOM library).

/** An element's laid-out box, as getBoundingClientRect gives it. */
export type Box = { left: number; right: number; top: number; bottom: number };

/** The box of the first element matching `selector` (throws when there is none). */
export async function boxOf(page: Page, selector: string): Promise<Box> {
  const box = (await page.evaluate(`(() => {
    const element = document.querySelector(${JSON.stringify(selector)});
    if (!element) return null;
    const { left, right, top, bottom } = element.getBoundingClientRect();
    return { left, right, top, bottom };
  })()`)) as Box | null;
  if (!box) throw new Error(`Nothing matches ${selector}`);
  return box;
}

// Ids are at most ~30 characters; a longer token (a URL, a request body) may wrap where it must.
const longestUnbreakable = 32;

/**
 * Words and ids in the page's main content that the layout broke across two lines ("publi c"):
 * each whitespace-separated token of each visible text node is measured with a Range, character by
 * character, and a token that goes on to a new line anywhere but after a hyphen or a slash (where
 * Unicode's line breaking allows a break, as in "well-known") is listed.
 */
export async function brokenTokens(page: Page): Promise<string[]> {
  return (await page.evaluate(`(() => {
    const broken = [];
    const root = document.querySelector('main') ?? document.body;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/\\S+/g)) {
        if (match[0].length > ${longestUnbreakable}) continue;
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.bottom)));
        if (lines.size < 2) continue;
        const lineOf = (i) => {
          range.setStart(node, match.index + i);
          range.setEnd(node, match.index + i + 1);
          const rect = [...range.getClientRects()].find((r) => r.width > 0);
          return rect ? Math.round(rect.bottom) : null;
        };
        for (let i = 1, previous = lineOf(0); i < match[0].length; i += 1) {
          const line = lineOf(i);
          if (line !== null && previous !== null && line !== previous && !'-/'.includes(match[0][i - 1])) {
            broken.push(match[0]);
            break;
          }
          if (line !== null) previous = line;
        }
      }
    }
    return broken;
  })()`)) as string[];
}

/** The page's background colour's relative luminance (0 black … 1 white), as WCAG defines it. */
export async function backgroundLuminance(page: Page): Promise<number> {
  const rgb = (await page.evaluate(
    `getComputedStyle(document.body).backgroundColor.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number)`,
  )) as number[];
  const [r, g, b] = rgb.map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

/** A CSS property of the first element matching `selector`, as computed. */
export async function computedStyle(page: Page, selector: string, property: string): Promise<string> {
  return (await page.evaluate(
    `getComputedStyle(document.querySelector(${JSON.stringify(selector)})).getPropertyValue(${JSON.stringify(property)})`,
  )) as string;
}

/**
 * The card labels (a narrow screen's `td::before`) taller than their cell, which would run into the
 * next label ("Spend this month" over "State").
 */
export async function overflowingLabels(page: Page): Promise<string[]> {
  return (await page.evaluate(`[...document.querySelectorAll('.stack td[data-label]')]
    .filter((td) => getComputedStyle(td, '::before').content !== 'none')
    .filter((td) => parseFloat(getComputedStyle(td, '::before').height) > td.getBoundingClientRect().height)
    .map((td) => td.dataset.label)`)) as string[];
}
