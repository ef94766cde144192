import { DocumentRejected,documentText } from './limits.ts';
import type { ParsedPage } from './types.ts';

// Tags a page starts with or soon contains; text that has none of them is not served as HTML.
const htmlMarker =
  /<(?:!doctype\s+html|html|head|body|title|meta|div|p|span|h[1-6]|table|ul|ol|section|article)\b/i;

/**
 * A page must be UTF-8 text that looks like HTML. Its bytes are exported as they are, so nothing
 * else is kept but the title.
 * @throws DocumentRejected otherwise.
 */
export function parsePage(data: Buffer): ParsedPage {
  const text = documentText(data);
  if (!htmlMarker.test(text.slice(0, 64 * 1024))) throw new DocumentRejected('does not look like HTML');
  const title = /<title[^>]*>([\s\S]{0,2000}?)<\/title>/i.exec(text)?.[1]?.replace(/\s+/g, ' ').trim();
  return { kind: 'page', title: title ? title.slice(0, 500) : null };
}
