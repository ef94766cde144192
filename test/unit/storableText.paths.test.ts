import { describe, expect, it } from '@jest/globals';

import { inspectJson, isStorableText, toStorableText } from '../../shared/primitives/storableText.ts';

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
    expect(inspectJson(value)).toEqual({
      tooDeep: false,
      unstorable: ['list.1', 'list.2.deep', 'k\uFFFDey'],
    });
    expect(inspectJson('a\u0000').unstorable).toEqual(['']);
    expect(inspectJson({ input: ['ok', 'b\uD800'] }).unstorable).toEqual(['input.1']);
  });

  it('reports the first 20 of many', () => {
    const many = inspectJson(Array.from({ length: 200_000 }, () => '\u0000')).unstorable;
    expect(many).toHaveLength(20);
    expect(many[19]).toBe('19');
  });

  it('tells a value nesting deeper than the limit, without recursion', () => {
    const nested = (levels: number) => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`) as unknown;
    expect(inspectJson(nested(64), 64).tooDeep).toBe(false);
    expect(inspectJson(nested(65), 64).tooDeep).toBe(true);
    expect(inspectJson(nested(500_000), 64).tooDeep).toBe(true);
    expect(inspectJson({ a: { b: 'x' } }, 2).tooDeep).toBe(false);
  });
});
