import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';

import { describe, expect, it } from '@jest/globals';

import { isPublicAddress } from '../../../shared/webhooks/ssrf.ts';
import { inputValue, signedInConsoleForFile } from '../oauth/harness.ts';

// Without WEBHOOK_ALLOW_PRIVATE: localhost and names resolving to private addresses are refused as
// 127.0.0.1 is, in words for a member; the form keeps what was typed; unknown console URLs are HTML.
const session = signedInConsoleForFile();

describe('the webhook form and console errors', () => {
  it.each(['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://api.localhost/hook'])(
    'refuses %s, keeping the URL and events, without operator advice',
    async (url) => {
      const csrf = inputValue((await session.client.get(`${session.base}/webhooks`)).text, '_csrf');
      const res = await session.client.post(`${session.base}/webhooks`, {
        _csrf: csrf,
        url,
        project: session.h.tenant.projectId,
        events: 'job.failed',
      });
      expect(res.status).toBe(400);
      expect(res.text).toContain('a private or loopback address');
      expect(res.text).not.toContain('WEBHOOK_ALLOW_PRIVATE');
      expect(res.text).toContain(`value="${url}"`);
      expect(res.text).toMatch(/value="job.failed"\s+checked/);
    },
  );

  it('refuses a name that resolves privately without saying the address it resolves to', async () => {
    // The machine's own name resolves to loopback or its private address (/etc/hosts), not a public one.
    const name = hostname();
    const addresses = await lookup(name, { all: true });
    expect(addresses.filter((a) => !isPublicAddress(a.address))).not.toEqual([]);
    const url = `http://${name}:9/hook`;
    const csrf = inputValue((await session.client.get(`${session.base}/webhooks`)).text, '_csrf');
    const res = await session.client.post(`${session.base}/webhooks`, {
      _csrf: csrf,
      url,
      project: session.h.tenant.projectId,
      events: 'job.failed',
    });
    expect(res.status).toBe(400);
    const alert = /<p class="alert" role="alert">([^<]*)<\/p>/.exec(res.text)?.[1];
    expect(alert).toContain(`The URL points at ${name}, a private or loopback address`);
    for (const { address } of addresses) expect(alert).not.toContain(address);
  });

  it('answers an unknown console URL with an HTML 404 inside the console frame', async () => {
    const res = await session.client.get(`${session.base}/nothing-here`);
    expect(res.status).toBe(404);
    expect(res.text).toContain('<!doctype html>');
    expect(res.text).toContain('Page not found');
    expect(res.text).toContain('aria-label="Console"');
    const signedOut = await fetch(`${session.h.base}/console/x/y/z`);
    expect(signedOut.status).toBe(404);
    expect(signedOut.headers.get('content-type')).toContain('text/html');
  });
});
