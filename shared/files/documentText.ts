/**
 * Native documents as text a model reads (MCP file resources): a page's HTML as markdown, a deck's
 * parsed slides as markdown. Deliberately small converters: headings, paragraphs, lists, links,
 * emphasis, line breaks and table rows survive; scripts, styles and every other tag are dropped.
 */

const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, code: string) => {
    if (code[0] === '#') {
      const point =
        code[1] === 'x' || code[1] === 'X' ? parseInt(code.slice(2), 16) : parseInt(code.slice(1), 10);
      return point > 0 && point <= 0x10ffff && (point < 0xd800 || point > 0xdfff)
        ? String.fromCodePoint(point)
        : '';
    }
    return named[code.toLowerCase()] ?? whole;
  });
}

/** A page's HTML as markdown. */
export function htmlToMarkdown(html: string): string {
  let text = html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(script|style|head|template|noscript)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(
      /<h([1-6])\b[^>]*>([\s\S]*?)<\/h\1\s*>/gi,
      (_m, level: string, inner: string) =>
        `\n\n${'#'.repeat(Number(level))} ${inner.replace(/\s+/g, ' ').trim()}\n\n`,
    )
    .replace(/<a\b[^>]*\bhref\s*=\s*["']([^"']*)["'][^>]*>([\s\S]*?)<\/a\s*>/gi, '[$2]($1)')
    .replace(/<(strong|b)\b[^>]*>([\s\S]*?)<\/\1\s*>/gi, '**$2**')
    .replace(/<(em|i)\b[^>]*>([\s\S]*?)<\/\1\s*>/gi, '*$2*')
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(td|th)\s*>/gi, ' | ')
    .replace(/<\/?(p|div|section|article|ul|ol|table|tr|blockquote|pre|header|footer|main)\b[^>]*>/gi, '\n\n')
    .replace(/<[^>]+>/g, '');
  text = decodeEntities(text);
  return text
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, ' ').trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The slides of a parsed deck (documents/<fileId>/parsed.json), in the shape the parse stores. */
type ParsedDeck = { slides: { texts: { paragraphs: { text: string }[] }[] }[] };

/** A deck's slides as markdown: a heading per slide, then its text boxes' paragraphs. */
export function deckToMarkdown(title: string, parsed: unknown): string {
  const slides = (parsed as ParsedDeck).slides ?? [];
  const parts = [`# ${title}`];
  slides.forEach((slide, index) => {
    const lines = slide.texts.flatMap((box) => box.paragraphs.map((p) => p.text.trim()).filter(Boolean));
    parts.push(`## Slide ${index + 1}`, lines.join('\n\n') || '(no text)');
  });
  return parts.join('\n\n');
}
