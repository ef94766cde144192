import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';

import { createApiServer } from '../../../api/http/apiServer.ts';

/** GET `path` through `agent`; whether the request went out on a connection kept from before. */
function get(port: number, agent: http.Agent): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });
}

describe('the web process server', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    const app = express();
    app.get('/', (_req, res) => res.send('ok'));
    server = createApiServer(app, 300_000).listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  it("keeps an idle connection past Node's default 5 s, so a client reusing it is not reset", async () => {
    expect(server.keepAliveTimeout).toBe(65_000);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await expect(get(port, agent)).resolves.toEqual({ status: 200, reused: false });
      // Past when Node's defaults close it (5 s, plus the 1 s it adds against this very race): the
      // agent would then open a new connection.
      await new Promise((resolve) => setTimeout(resolve, 7_000));
      await expect(get(port, agent)).resolves.toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it("bounds a request's headers and whole request by the configured timeout", () => {
    expect(server.requestTimeout).toBe(300_000);
    expect(server.headersTimeout).toBe(60_000);
  });
});
