import { describe, expect, it } from '@jest/globals';

import { signedInConsoleForFile } from '../oauth/harness.ts';

// A call answered from the response cache is marked as such in the console's request log.
const session = signedInConsoleForFile();

describe('console request log and the response cache', () => {
  it('marks a cache hit in the list and on its page', async () => {
    await session.h.t.startWorker();
    const post = () =>
      fetch(`${session.h.base}/api/pub/v1/text`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${session.h.tenant.liveKey}`,
          'content-type': 'application/json',
          'cache-ttl': '600',
        },
        body: JSON.stringify({ prompt: 'keep this one' }),
      });
    expect((await post()).headers.get('cache-status')).toBe('svc; fwd=uri-miss; stored');
    expect((await post()).headers.get('cache-status')).toMatch(/^svc; hit;/);
    await session.h.t.deps.requestLog.flush();
    const log = await session.client.get(`${session.base}/logs`);
    expect(log.status).toBe(200);
    // Newest first: the hit, then the miss, which is not marked.
    expect(log.text.match(/\(cache hit\)/g)).toHaveLength(1);
    const hitPage = log.text.match(/href="([^"]*\/logs\/[^"?]+)"/)?.[1];
    const call = await session.client.get(hitPage!);
    expect(call.text).toMatch(/<dt>Response cache<\/dt>\s*<dd>hit<\/dd>/);
  });
});
