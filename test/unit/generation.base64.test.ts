import { describe, expect, it } from '@jest/globals';

import { base64DecodedBytes, decodeBase64 } from '../../shared/generation/base64.ts';

describe('decodeBase64', () => {
  it('decodes standard and URL-safe base64, with or without padding, ignoring line breaks', () => {
    const bytes = Buffer.from([0xfb, 0xff, 0xfe, 0x41, 0x42]);
    expect(decodeBase64(bytes.toString('base64'))).toEqual(bytes);
    expect(decodeBase64(bytes.toString('base64url'))).toEqual(bytes);
    expect(decodeBase64('QUJD\nREVG\r\n')).toEqual(Buffer.from('ABCDEF'));
    expect(decodeBase64('QUI')).toEqual(Buffer.from('AB'));
  });

  it.each([
    ['characters outside the alphabet', 'QUJD!'],
    ['a length no encoder produces', 'QUJDR'],
    ['padding on a short group', 'QQ='],
    ['padding in the middle', 'QQ==QUJD'],
    ['both alphabets mixed', 'ab+_'],
  ])('refuses %s', (_name, text) => {
    expect(decodeBase64(text)).toBeUndefined();
  });

  it('tells the decoded size without decoding', () => {
    for (const n of [0, 1, 2, 3, 100, 1001]) {
      const text = Buffer.alloc(n, 1).toString('base64');
      expect(base64DecodedBytes(text)).toBe(n);
      expect(base64DecodedBytes(text.replace(/=+$/, ''))).toBe(n);
    }
    expect(base64DecodedBytes('QUJD\nREVG\n')).toBe(6);
  });
});
