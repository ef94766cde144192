import type { Browser } from 'playwright-core';

import type { Logger } from '../../shared/observability/logger.ts';
import { launchChromium } from './chromium.ts';

/** How long one render may take before it is abandoned (the job then retries). */
export const renderTimeoutMs = 60_000;

/**
 * One headless browser per worker process, launched on the first render and closed with the
 * worker; each render gets its own context, so jobs share nothing (cookies, cache, storage). A
 * browser that died is launched again by the next render.
 */
export class DeckRenderer {
  private browser: Promise<Browser> | undefined;
  private readonly logger: Logger;

  constructor(logger: Logger) {
    this.logger = logger;
  }

  private launch(): Promise<Browser> {
    if (!this.browser) {
      const launching = launchChromium({ logger: this.logger }).then(({ browser }) => browser);
      this.browser = launching;
      launching.then(
        (browser) =>
          browser.on('disconnected', () => {
            if (this.browser === launching) this.browser = undefined;
          }),
        () => {
          if (this.browser === launching) this.browser = undefined;
        },
      );
    }
    return this.browser;
  }

  /**
   * Prints `html` to PDF at `size`, with JavaScript off and every network request refused (the
   * document carries its pictures as data: URIs).
   * @throws Error when the render takes longer than renderTimeoutMs or `signal` aborts.
   */
  async pdf(html: string, size: { width: string; height: string }, signal: AbortSignal): Promise<Buffer> {
    const browser = await this.launch();
    const context = await browser.newContext({ javaScriptEnabled: false, offline: true });
    const stop = AbortSignal.any([signal, AbortSignal.timeout(renderTimeoutMs)]);
    const abandon = new Promise<never>((_, reject) => {
      stop.addEventListener('abort', () => reject(new Error('the render was stopped or timed out')), {
        once: true,
      });
    });
    try {
      const render = async () => {
        await context.route('**/*', (route) => route.abort('blockedbyclient'));
        const page = await context.newPage();
        await page.setContent(html, { waitUntil: 'load', timeout: renderTimeoutMs });
        return page.pdf({
          ...size,
          printBackground: true,
          preferCSSPageSize: true,
          margin: { top: '0', right: '0', bottom: '0', left: '0' },
        });
      };
      return await Promise.race([render(), abandon]);
    } finally {
      await context
        .close()
        .catch((error: unknown) => this.logger.warn({ err: error }, 'closing a render context failed'));
    }
  }

  async close(): Promise<void> {
    const browser = this.browser;
    this.browser = undefined;
    if (browser) await (await browser.catch(() => undefined))?.close();
  }
}
