import { describe, expect, it } from '@jest/globals';

import { defaultPrices } from '../../shared/config/prices.ts';
import type { RouteEntry, RouteGroup } from '../../shared/config/providersConfig.ts';
import type { BalanceStrategy } from '../../shared/config/routeGroups.ts';
import { ProviderError, type TextGeneration } from '../../shared/providers/types.ts';
import { Balancer } from '../../worker/providers/balance.ts';

const entry = (provider: string): RouteEntry => ({ provider, model: 'm', prices: defaultPrices });
const [a, b, c] = [entry('a'), entry('b'), entry('c')];
const group = (strategy: BalanceStrategy, weights = [1, 1]): RouteGroup => ({
  strategy,
  members: [a, b, c].slice(0, weights.length),
  weights,
});

/** A balancer on a clock the test moves, and a chat client per member whose answers the test settles. */
function setup() {
  let now = 1_000_000;
  const balancer = new Balancer({ failurePenaltyMs: () => 30_000, clock: () => now });
  const answer = (text: string): TextGeneration => ({
    text,
    model: 'm',
    usage: { inputTokens: 1, outputTokens: 1 },
    finishReason: 'stop',
  });
  /** A call to `member` taking `ms` to its first token (none: it fails retryably after `ms`). */
  const call = async (member: RouteEntry, ms: number, fails = false) => {
    const clients = balancer.observe(
      {
        text: {
          chat: async ({ onDelta }) => {
            now += ms;
            if (fails) throw new ProviderError('503', true, { status: 503 });
            onDelta?.('x');
            return answer('x');
          },
        },
      },
      member,
    );
    return clients
      .text!.chat({ messages: [], maxTokens: 1, signal: new AbortController().signal })
      .catch(() => undefined);
  };
  const first = (g: RouteGroup) => balancer.order(g)[0]!.provider;
  return { balancer, call, first, advance: (ms: number) => (now += ms) };
}

describe('Balancer', () => {
  it('weighted: smooth round-robin, each member its share interleaved, the rest behind by weight', () => {
    const { first, balancer } = setup();
    const g = group('weighted', [5, 1, 1]);
    expect(Array.from({ length: 7 }, () => first(g)).join('')).toBe('aabacaa');
    expect(balancer.order(g).map((e) => e.provider)).toEqual(['a', 'b', 'c']);
    const picks = Array.from({ length: 700 }, () => first(g));
    expect(['a', 'b', 'c'].map((p) => picks.filter((x) => x === p).length)).toEqual([500, 100, 100]);
  });

  it('least-busy: fewest calls in flight first; idle members take turns', () => {
    const { first, balancer } = setup();
    const g = group('least-busy');
    expect([first(g), first(g), first(g), first(g)]).toEqual(['a', 'b', 'a', 'b']);
    // A call to `a` that has not settled keeps it busy.
    const slow = balancer.observe({ embedding: { embed: () => new Promise(() => {}) } }, a);
    void slow.embedding!.embed({ input: [], signal: new AbortController().signal });
    expect([first(g), first(g), first(g)]).toEqual(['b', 'b', 'b']);
  });

  it('latency: unmeasured members are probed, then the lowest figure wins; a stale figure is probed again', async () => {
    const { first, call, advance } = setup();
    const g = group('latency');
    expect(first(g)).toBe('a');
    await call(a, 500);
    expect(first(g)).toBe('b');
    await call(b, 50);
    expect([first(g), first(g)]).toEqual(['b', 'b']);
    // A minute later `a`'s figure is stale: one call probes it, and its new figure replaces the old.
    advance(30_000);
    await call(b, 60);
    advance(31_000);
    expect(first(g)).toBe('a');
    await call(a, 20);
    expect(first(g)).toBe('a');
    // An answer slower than the other's figure moves the average, a few move the choice.
    await call(a, 200);
    expect(first(g)).toBe('b');
  });

  it('latency: a retryable failure counts as the whole timeout, so the other member is preferred', async () => {
    const { first, call } = setup();
    const g = group('latency');
    await call(a, 10);
    await call(b, 40);
    expect(first(g)).toBe('a');
    await call(a, 5, true);
    expect(first(g)).toBe('b');
  });
});
