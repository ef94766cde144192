import { describe, expect, it } from '@jest/globals';

import { maxDeltaUnits, splitForNotify } from '../../shared/generation/textDeltas.ts';

describe('splitForNotify', () => {
  it('keeps short text whole and splits long text in order', () => {
    expect(splitForNotify('hello')).toEqual(['hello']);
    const long = 'a'.repeat(2500);
    const pieces = splitForNotify(long);
    expect(pieces.map((p) => p.length)).toEqual([1000, 1000, 500]);
    expect(pieces.join('')).toBe(long);
  });

  it('never cuts a surrogate pair in two', () => {
    const text = 'x'.repeat(maxDeltaUnits - 1) + '😀' + 'y';
    const pieces = splitForNotify(text);
    expect(pieces[0]).toBe('x'.repeat(maxDeltaUnits - 1));
    expect(pieces[1]).toBe('😀y');
    expect(pieces.join('')).toBe(text);
  });

  it('stays under the 8000-byte NOTIFY payload limit whatever the characters', () => {
    for (const unit of ['\u0001', '"', 'न', '😀']) {
      for (const piece of splitForNotify(unit.repeat(3000))) {
        const payload = JSON.stringify({ id: 'job_' + 'x'.repeat(20), offset: 123456789, text: piece });
        expect(Buffer.byteLength(payload)).toBeLessThan(8000);
      }
    }
  });
});
