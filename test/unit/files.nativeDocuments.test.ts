import { describe, expect, it } from '@jest/globals';
import JSZip from 'jszip';

import { contentDisposition } from '../../api/downloads/contentDisposition.ts';
import { exportName } from '../../shared/files/findExport.ts';
import { nativeKindOf } from '../../shared/files/nativeDocuments.ts';
import { DocumentRejected } from '../../worker/documents/limits.ts';
import { parseDeck } from '../../worker/documents/parseDeck.ts';
import { parsePage } from '../../worker/documents/parsePage.ts';
import { parseCsv } from '../../worker/documents/parseSheet.ts';
import { openZip, resolvePart } from '../../worker/documents/zipReader.ts';
import { deckHtml } from '../../worker/render/deckHtml.ts';

describe('nativeKindOf', () => {
  it('names the kind by extension, in any case', () => {
    expect(['a.html', 'B.HTM', 'c.Csv', 'd.XLSX', 'e.pptx'].map(nativeKindOf)).toEqual([
      'page',
      'page',
      'sheet',
      'sheet',
      'deck',
    ]);
    expect(['a.ppt', 'b.xls', 'html', 'c.html.txt', 'd.docx', ''].map(nativeKindOf)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('openZip', () => {
  it('refuses bytes that are not a zip', () => {
    expect(() => openZip(Buffer.from('hello'))).toThrow(DocumentRejected);
  });

  it('resolves relationship targets against their part', () => {
    expect(resolvePart('ppt/presentation.xml', 'slides/slide1.xml')).toBe('ppt/slides/slide1.xml');
    expect(resolvePart('ppt/slides/slide1.xml', '../media/image1.png')).toBe('ppt/media/image1.png');
    expect(resolvePart('ppt/slides/slide1.xml', '/ppt/media/a.png')).toBe('ppt/media/a.png');
  });
});

describe('parsers', () => {
  it('takes a page only when it is UTF-8 HTML', () => {
    expect(parsePage(Buffer.from('<html><head><title> Hi  there </title></head></html>'))).toEqual({
      kind: 'page',
      title: 'Hi there',
    });
    expect(() => parsePage(Buffer.from('just words'))).toThrow(DocumentRejected);
    expect(() => parsePage(Buffer.from([0xc3, 0x28]))).toThrow(DocumentRejected);
  });

  it('parses CSV per RFC 4180 and refuses broken quoting', () => {
    expect(parseCsv(Buffer.from('\ufeffa,"b ""q"", c"\r\n"x\ny",2\r\n'), 'n').sheets[0]!.rows).toEqual([
      ['a', 'b "q", c'],
      ['x\ny', '2'],
    ]);
    expect(() => parseCsv(Buffer.from('a,"open\n'), 'n')).toThrow(DocumentRejected);
  });

  it('refuses a pptx part with a DTD (entity expansion)', async () => {
    const zip = new JSZip();
    zip.file('ppt/presentation.xml', '<!DOCTYPE x [<!ENTITY a "aaaa">]><p:presentation/>');
    await expect(parseDeck(await zip.generateAsync({ type: 'nodebuffer' }))).rejects.toThrow(/DTD/);
  });
});

describe('deckHtml', () => {
  it('escapes slide text, so a deck cannot inject markup into its render', () => {
    const html = deckHtml(
      {
        kind: 'deck',
        width: 9_144_000,
        height: 5_143_500,
        slides: [
          {
            texts: [
              {
                box: null,
                paragraphs: [{ text: '<img src=x onerror=alert(1)> & "q"', sizePt: null, bold: false }],
              },
            ],
            pictures: [],
          },
        ],
      },
      new Map(),
    );
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('@page { size: 960.00px 540.00px; margin: 0; }');
  });
});

describe('Content-Disposition of exports', () => {
  it('gives an ASCII fallback and the UTF-8 name, without separators or quotes', () => {
    expect(contentDisposition('attachment', exportName('नेपाल "report"/v1.pptx', 'pdf'))).toBe(
      `attachment; filename="_____ _report__v1.pdf"; filename*=UTF-8''${encodeURIComponent('नेपाल _report__v1.pdf')}`,
    );
    expect(contentDisposition('attachment', "it's (1).csv")).toBe(
      `attachment; filename="it's (1).csv"; filename*=UTF-8''it%27s%20%281%29.csv`,
    );
  });
});
