import { describe, expect, it } from '@jest/globals';

import { parseResourceUri, resourceUri } from '../../api/mcp/resourceUris.ts';
import { deckToMarkdown, htmlToMarkdown } from '../../shared/files/documentText.ts';

describe('resource URIs', () => {
  it('round-trip each kind and refuse anything else', () => {
    for (const ref of [
      { kind: 'page', slug: 'holiday-policy' },
      { kind: 'file', fileId: 'file_a b' },
      { kind: 'task', taskId: 'task_1' },
    ] as const) {
      expect(parseResourceUri(resourceUri(ref))).toEqual(ref);
    }
    expect(resourceUri({ kind: 'file', fileId: 'file_a b' })).toBe('svc://files/file_a%20b');
    for (const uri of [
      'svc://tasks/',
      'svc://tasks/a/b',
      'svc://tasks/%E0',
      'test://static-text',
      'svc://other/x',
    ]) {
      expect(parseResourceUri(uri)).toBeUndefined();
    }
  });
});

describe('native documents as text', () => {
  it('turns a page into markdown without its scripts and styles', () => {
    const html =
      '<html><head><title>T</title><style>p{}</style></head><body><h1>Plan &amp; budget</h1>' +
      '<p>Read <a href="https://example.com">this</a>, <b>now</b>.</p><ul><li>one</li><li>two</li></ul>' +
      '<script>alert(1)</script><table><tr><td>a</td><td>b</td></tr></table></body></html>';
    expect(htmlToMarkdown(html)).toBe(
      '# Plan & budget\n\nRead [this](https://example.com), **now**.\n\n- one\n- two\n\na | b |',
    );
  });

  it('turns a deck into a section per slide', () => {
    const parsed = {
      slides: [{ texts: [{ paragraphs: [{ text: 'Hello' }, { text: ' ' }] }] }, { texts: [] }],
    };
    expect(deckToMarkdown('deck.pptx', parsed)).toBe(
      '# deck.pptx\n\n## Slide 1\n\nHello\n\n## Slide 2\n\n(no text)',
    );
  });
});
