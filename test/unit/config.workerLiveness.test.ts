import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../shared/config/config.ts';

describe('WORKER_HEARTBEAT_MS and WORKER_STALE_AFTER_MS', () => {
  it('default to a beat every 5 s and death after 20 s', () => {
    const config = loadConfig({});
    expect(config.workerHeartbeatMs).toBe(5000);
    expect(config.workerStaleAfterMs).toBe(20_000);
  });

  it('take shorter values that keep three beats within the staleness limit', () => {
    const config = loadConfig({ WORKER_HEARTBEAT_MS: '1000', WORKER_STALE_AFTER_MS: '5000' });
    expect(config.workerHeartbeatMs).toBe(1000);
    expect(config.workerStaleAfterMs).toBe(5000);
    expect(
      loadConfig({ WORKER_HEARTBEAT_MS: '2000', WORKER_STALE_AFTER_MS: '6000' }).workerStaleAfterMs,
    ).toBe(6000);
  });

  it('refuse a staleness limit shorter than three heartbeats', () => {
    expect(() => loadConfig({ WORKER_HEARTBEAT_MS: '2000', WORKER_STALE_AFTER_MS: '5999' })).toThrow(
      /WORKER_STALE_AFTER_MS: must be at least 3 heartbeats \(3 × WORKER_HEARTBEAT_MS = 6000\)/,
    );
    // The default staleness limit against a longer heartbeat.
    expect(() => loadConfig({ WORKER_HEARTBEAT_MS: '10000' })).toThrow(
      /WORKER_STALE_AFTER_MS: must be at least 3/,
    );
  });

  it.each([
    ['a heartbeat under 500 ms', { WORKER_HEARTBEAT_MS: '499' }, /WORKER_HEARTBEAT_MS/],
    [
      'a heartbeat over a minute',
      { WORKER_HEARTBEAT_MS: '60001', WORKER_STALE_AFTER_MS: '600000' },
      /WORKER_HEARTBEAT_MS/,
    ],
    [
      'a staleness limit under 5 s',
      { WORKER_HEARTBEAT_MS: '500', WORKER_STALE_AFTER_MS: '4999' },
      /WORKER_STALE_AFTER_MS/,
    ],
    ['a fraction of a millisecond', { WORKER_HEARTBEAT_MS: '1000.5' }, /WORKER_HEARTBEAT_MS/],
    ['a word', { WORKER_STALE_AFTER_MS: 'soon' }, /WORKER_STALE_AFTER_MS/],
  ] as const)('refuse %s', (_, env, variable) => {
    expect(() => loadConfig(env)).toThrow(variable);
  });
});
