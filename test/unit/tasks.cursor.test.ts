import { randomBytes } from 'node:crypto';

import { describe, expect, it } from '@jest/globals';

import { type CursorKey, decodeCursor, encodeCursor } from '../../api/http/cursor.ts';
import { AppError } from '../../shared/errors/appError.ts';

const key: CursorKey = { key: randomBytes(32) };
const otherKey: CursorKey = { key: randomBytes(32) };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof AppError ? error.code : 'other';
  }
}

describe('task cursors', () => {
  it('round-trips a position, opaquely and compactly', () => {
    for (const seq of [0, 1, 250, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      const cursor = encodeCursor(key, { purpose: 'messages', taskId: 'task_a', seq });
      expect(cursor).toMatch(/^[A-Za-z0-9_-]{35}$/);
      expect(decodeCursor(key, cursor, 'messages', 'task_a')).toBe(seq);
    }
  });

  it('refuses cursors of another task, endpoint or key, and any edit', () => {
    const cursor = encodeCursor(key, { purpose: 'messages', taskId: 'task_a', seq: 42 });
    expect(codeOf(() => decodeCursor(key, cursor, 'messages', 'task_b'))).toBe('invalid_cursor');
    expect(codeOf(() => decodeCursor(key, cursor, 'stream', 'task_a'))).toBe('invalid_cursor');
    expect(codeOf(() => decodeCursor(otherKey, cursor, 'messages', 'task_a'))).toBe('invalid_cursor');
    for (let i = 0; i < cursor.length; i++) {
      const edited = cursor.slice(0, i) + (cursor[i] === 'x' ? 'y' : 'x') + cursor.slice(i + 1);
      expect(codeOf(() => decodeCursor(key, edited, 'messages', 'task_a'))).toBe('invalid_cursor');
    }
    for (const garbage of ['', 'abc', `${cursor}x`, cursor.slice(1), '!'.repeat(35), ' '.repeat(35)]) {
      expect(codeOf(() => decodeCursor(key, garbage, 'messages', 'task_a'))).toBe('invalid_cursor');
    }
  });
});
