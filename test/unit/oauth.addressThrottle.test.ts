import { describe, expect, it } from '@jest/globals';

import { AddressThrottle } from '../../api/web/oauth/addressThrottle.ts';

describe('AddressThrottle', () => {
  it('allows perWindow units an address per window and says when the window ends', () => {
    let now = 0;
    const throttle = new AddressThrottle({ perWindow: 3, windowMs: 3_600_000, maxAddresses: 100 }, () => now);
    expect([throttle.take('a'), throttle.take('a'), throttle.take('a')]).toEqual([null, null, null]);
    now = 600_000;
    expect(throttle.take('a')).toBe(3_000);
    // Another address has its own budget.
    expect(throttle.take('b')).toBeNull();
    now = 3_600_000;
    expect(throttle.take('a')).toBeNull();
  });

  it('past maxAddresses forgets the oldest window only', () => {
    let now = 0;
    const throttle = new AddressThrottle({ perWindow: 1, windowMs: 3_600_000, maxAddresses: 2 }, () => now);
    throttle.take('a');
    now = 1;
    throttle.take('b');
    now = 2;
    throttle.take('c');
    // a was dropped (a fresh budget); b and c are still counted.
    expect(throttle.take('b')).not.toBeNull();
    expect(throttle.take('c')).not.toBeNull();
    expect(throttle.take('a')).toBeNull();
  });
});
