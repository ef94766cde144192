import { createLogger } from '../../shared/observability/logger.ts';
import { DeckRenderer } from '../../worker/render/deckRenderer.ts';

/**
 * Prints a one-line page to PDF with the worker's deck renderer, logging as the worker does, then
 * `rendered <first bytes> <size>`: for tests that run the renderer where the machine differs from
 * the test's own (a chroot, where the kernel refuses user namespaces).
 */
const logger = createLogger('info', 'deck-render-probe');
const renderer = new DeckRenderer(logger);
const pdf = await renderer.pdf('<p>probe</p>', { width: '4in', height: '3in' }, new AbortController().signal);
await renderer.close();
process.stdout.write(`rendered ${pdf.subarray(0, 5).toString('latin1')} ${pdf.length}\n`);
