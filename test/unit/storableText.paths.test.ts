import { describe, expect, it } from '@jest/globals';

import { isStorableText, toStorableText, unstorablePaths } from '../../shared/storableText.ts';

describe('storable text', () => {
  it('accepts any well-formed text without NUL, surrogate pairs included', () => {
    expect(isStorableText('plain, é, नमस्ते, 😀')).toBe(true);
    expect(isStorableText('a\u0000b')).toBe(false);
    expect(isStorableText('a\uD800')).toBe(false);
    expect(isStorableText('\uDC00a')).toBe(false);
  });

  it('replaces each refused character with U+FFFD and keeps the rest', () => {
    expect(toStorableText('a\u0000b\uD800c😀')).toBe('a\uFFFDb\uFFFDc😀');
  });

  it('names every refused string and object key by its dotted path', () => {
    const value = { ok: 'fine', list: ['x', 'y\u0000', { deep: '\uDFFF' }], 'k\u0000ey': 'v', n: 3, z: null };
    expect(unstorablePaths(value)).toEqual(['list.1', 'list.2.deep', 'k\uFFFDey']);
    expect(unstorablePaths('a\u0000')).toEqual(['']);
    expect(unstorablePaths(['ok', 'b\uD800'], 'input')).toEqual(['input.1']);
  });

  it('reports the first 20 of many', () => {
    const many = unstorablePaths(Array.from({ length: 200_000 }, () => '\u0000'));
    expect(many).toHaveLength(20);
    expect(many[19]).toBe('19');
  });
});
