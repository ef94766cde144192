import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../shared/config/config.ts';

const pooled = 'postgres://app:secret@pgbouncer.internal:6432/svc';
const direct = 'postgres://app:secret@db.internal:5432/svc';

describe('DATABASE_POOLER', () => {
  it.each([
    ['nothing set (embedded PostgreSQL)', {}, 'none'],
    ['DATABASE_URL alone', { DATABASE_URL: direct }, 'none'],
    [
      'DATABASE_DIRECT_URL equal to DATABASE_URL',
      { DATABASE_URL: direct, DATABASE_DIRECT_URL: direct },
      'none',
    ],
    [
      'a DATABASE_DIRECT_URL of its own',
      { DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct },
      'transaction',
    ],
    ['transaction, set', { DATABASE_URL: pooled, DATABASE_POOLER: 'transaction' }, 'transaction'],
    [
      'none, set over a direct URL of its own',
      { DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DATABASE_POOLER: 'none' },
      'none',
    ],
  ] as const)('with %s', (_, env, expected) => {
    expect(loadConfig(env).databasePooler).toBe(expected);
  });

  it('refuses another value at boot', () => {
    expect(() => loadConfig({ DATABASE_POOLER: 'session' })).toThrow(/DATABASE_POOLER/);
  });
});
