import { describe, expect, it } from '@jest/globals';

import { parseSince } from '../../shared/webhooks/resend.ts';

// The time `webhook resend --since` and the console's "Resend failed since…" accept.
describe('parseSince', () => {
  it.each([
    ['2026-11-29', '2026-11-29T00:00:00.000Z'],
    ['2026-11-29T08:30', '2026-11-29T08:30:00.000Z'],
    ['2026-11-29T08:30:15', '2026-11-29T08:30:15.000Z'],
    ['2026-11-29T08:30:15.123Z', '2026-11-29T08:30:15.123Z'],
    ['2026-11-29T08:30:15.123456Z', '2026-11-29T08:30:15.123Z'],
    ['2026-11-29T08:30+01:00', '2026-11-29T07:30:00.000Z'],
    [' 2028-02-29T23:59:59-05:00 ', '2028-03-01T04:59:59.000Z'],
  ])('reads %s as %s (UTC unless it says)', (text, iso) => {
    expect(parseSince(text)?.toISOString()).toBe(iso);
  });

  it.each([
    '',
    'yesterday',
    '1732868400',
    '2026-11-29 08:30',
    '2026-13-01',
    '2026-02-29',
    '2026-11-31T00:00',
    '2026-11-29T24:00',
    '2026-11-29T08:60',
    '2026-11-29T08:30:61',
    '2026-11-29T08:30Zjunk',
  ])('refuses %p', (text) => {
    expect(parseSince(text)).toBeNull();
  });
});
