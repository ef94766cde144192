import { describe, expect, it } from '@jest/globals';

import { ifRangeAllows, noneMatchHits, parseRange } from '../../api/downloads/byteRange.ts';
import { contentDisposition } from '../../api/downloads/contentDisposition.ts';

describe('parseRange', () => {
  const size = 1000;

  it('answers the whole representation without a usable single range', () => {
    for (const header of [
      undefined,
      '',
      'items=0-10',
      'bytes=',
      'bytes=-',
      'bytes=abc',
      'bytes=1-2-3',
      'bytes=+1-5',
      'bytes=1e2-',
      'bytes=0x10-20',
      'bytes=10-5', // first > last is invalid syntax: ignored, not refused
      'bytes=0-9,20-29', // several ranges: the whole body is an allowed answer
    ]) {
      expect([header, parseRange(header, size)]).toEqual([header, { kind: 'whole' }]);
    }
  });

  it('reads first-last, clamping the last byte to the end', () => {
    expect(parseRange('bytes=0-99', size)).toEqual({ kind: 'range', start: 0, end: 99 });
    expect(parseRange('bytes=500-500', size)).toEqual({ kind: 'range', start: 500, end: 500 });
    expect(parseRange('bytes=990-5000', size)).toEqual({ kind: 'range', start: 990, end: 999 });
    expect(parseRange('Bytes = 0-0', size)).toEqual({ kind: 'range', start: 0, end: 0 });
  });

  it('reads an open-ended range', () => {
    expect(parseRange('bytes=700-', size)).toEqual({ kind: 'range', start: 700, end: 999 });
    expect(parseRange('bytes=0-', size)).toEqual({ kind: 'range', start: 0, end: 999 });
  });

  it('reads a suffix, the whole body when it is longer than the body', () => {
    expect(parseRange('bytes=-100', size)).toEqual({ kind: 'range', start: 900, end: 999 });
    expect(parseRange('bytes=-5000', size)).toEqual({ kind: 'range', start: 0, end: 999 });
  });

  it('refuses a range that selects no byte', () => {
    expect(parseRange('bytes=1000-', size)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=1000-2000', size)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=99999999999999999999-', size)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', size)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-10', 0)).toEqual({ kind: 'unsatisfiable' });
  });
});

describe('conditional headers', () => {
  const etag = '"file_1"';

  // If-None-Match hits on the tag, a weak copy of it, a list holding it, or *; If-Range allows the
  // range only for the current strong tag (RFC 9110 13.1.2 and 13.1.5).
  it.each([
    [undefined, false, true],
    ['"file_1"', true, true],
    ['W/"file_1"', true, false],
    ['"other", "file_1"', true, false],
    ['*', true, false],
    ['"other"', false, false],
    ['Wed, 21 Oct 2015 07:28:00 GMT', false, false],
  ])('%s: If-None-Match hits %s, If-Range allows %s', (header, hits, allows) => {
    expect(noneMatchHits(header, etag)).toBe(hits);
    expect(ifRangeAllows(header, etag)).toBe(allows);
  });
});

describe('contentDisposition', () => {
  it('quotes ASCII names and adds filename* for others', () => {
    expect(contentDisposition('inline', 'vid_1.mp4')).toBe(
      `inline; filename="vid_1.mp4"; filename*=UTF-8''vid_1.mp4`,
    );
    expect(contentDisposition('attachment', 'a"b.mp4')).toBe(
      `attachment; filename="a_b.mp4"; filename*=UTF-8''a_b.mp4`,
    );
    expect(contentDisposition('attachment', 'नेपाल.mp4')).toBe(
      `attachment; filename="_____.mp4"; filename*=UTF-8''%E0%A4%A8%E0%A5%87%E0%A4%AA%E0%A4%BE%E0%A4%B2.mp4`,
    );
  });
});
