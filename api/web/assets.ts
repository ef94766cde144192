import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

import type { Router } from 'express';

// Read once at start: the stylesheet is part of the code, not something that changes while it runs.
const css = readFileSync(new URL('./assets/site.css', import.meta.url));
const version = createHash('sha256').update(css).digest('hex').slice(0, 12);

/** The stylesheet's address, named by its content so a browser may keep it as long as it likes. */
export const stylesheetHref = `/assets/site-${version}.css`;

/** Serves the pages' one stylesheet (the CSP allows styles from this origin only). */
export function installAssets(pages: Router): void {
  pages.get(stylesheetHref, (_req, res) => {
    res
      .status(200)
      .set({
        'Content-Type': 'text/css; charset=utf-8',
        'Cache-Control': 'public, max-age=31536000, immutable',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(css);
  });
}
