import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { makeApp } from '../../../api/app.ts';
import { loadConfig } from '../../../shared/config/config.ts';
import { setupTestContext, type TestContext, testEnv } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let tenant: Tenant;
const servers: http.Server[] = [];

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await t.close();
});

async function listen(server: http.Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** The api as a process with this TRUST_PROXY would serve it, on a real port. */
async function apiWith(trustProxy: string): Promise<number> {
  const config = loadConfig({ ...testEnv(), DATABASE_URL: t.databaseUrl, TRUST_PROXY: trustProxy });
  return listen(http.createServer(makeApp({ ...t.deps, config })));
}

/**
 * A router in front of the api, on loopback: it forwards each request, appending to
 * X-Forwarded-For the addresses the hops before it saw (`seen`, client side first), as a dyno
 * router or load balancer chain does. Whatever X-Forwarded-For the client sent is kept in front.
 */
async function routerTo(apiPort: number, seen: string[]): Promise<number> {
  return listen(
    http.createServer((req, res) => {
      const forwarded = [req.headers['x-forwarded-for'], ...seen].filter(Boolean).join(', ');
      const upstream = http.request(
        {
          host: '127.0.0.1',
          port: apiPort,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, 'x-forwarded-for': forwarded },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(upstream);
    }),
  );
}

/** The client address the api saw, read from a key that allows none: its 403 names the address. */
async function seenAddress(routerPort: number, spoofed?: string): Promise<string> {
  const key = await tenant.key({ ipAllowlist: ['192.0.2.255/32'] });
  const res = await fetch(`http://127.0.0.1:${routerPort}/api/pub/v1/me`, {
    headers: {
      authorization: `Bearer ${key.secret}`,
      ...(spoofed ? { 'x-forwarded-for': spoofed } : {}),
    },
  });
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(res.status).toBe(403);
  expect(body.error.code).toBe('api_key_ip_not_allowed');
  return /Requests from (\S+) are not allowed/.exec(body.error.message)![1]!;
}

async function meStatus(routerPort: number, allow: string, spoofed?: string): Promise<number> {
  const key = await tenant.key({ ipAllowlist: [allow] });
  const res = await fetch(`http://127.0.0.1:${routerPort}/api/pub/v1/me`, {
    headers: {
      authorization: `Bearer ${key.secret}`,
      ...(spoofed ? { 'x-forwarded-for': spoofed } : {}),
    },
  });
  await res.arrayBuffer();
  return res.status;
}

const client = '203.0.113.7';
const spoof = '198.51.100.66';

describe('TRUST_PROXY behind a router, as Express takes it', () => {
  it('a hop count: the address the one router saw, not what the client claims', async () => {
    const router = await routerTo(await apiWith('1'), [client]);
    expect(await seenAddress(router, spoof)).toBe(client);
    expect(await meStatus(router, `${client}/32`, spoof)).toBe(200);
    expect(await meStatus(router, `${spoof}/32`, spoof)).toBe(403);
  });

  it('true: the left-most address of X-Forwarded-For', async () => {
    const router = await routerTo(await apiWith('true'), [client]);
    expect(await seenAddress(router)).toBe(client);
    expect(await seenAddress(router, spoof)).toBe(spoof);
    expect(await meStatus(router, client)).toBe(200);
  });

  it('an address list: every listed hop is trusted, the first one outside it is the client', async () => {
    // The client reached an edge balancer, which reached the router from 10.1.2.3.
    const router = await routerTo(await apiWith('loopback, 10.0.0.0/8'), [client, '10.1.2.3']);
    expect(await seenAddress(router, spoof)).toBe(client);
    expect(await meStatus(router, '203.0.113.0/24', spoof)).toBe(200);
    // Without 10.0.0.0/8 in the list the balancer's hop is where trust ends.
    const defaultRouter = await routerTo(await apiWith('loopback'), [client, '10.1.2.3']);
    expect(await seenAddress(defaultRouter, spoof)).toBe('10.1.2.3');
  });

  it('false: the address of the connection itself', async () => {
    const router = await routerTo(await apiWith('false'), [client]);
    expect(await seenAddress(router, spoof)).toBe('127.0.0.1');
  });

  it('rejects a value Express would not take at boot, naming it', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/33' })).toThrow(
      /TRUST_PROXY.*"10\.0\.0\.0\/33"/,
    );
    expect(() => loadConfig({ TRUST_PROXY: 'yes' })).toThrow(/TRUST_PROXY/);
  });
});
