import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express, { type Express } from 'express';

import { createApiServer } from '../../../api/http/apiServer.ts';

describe("the web process server's requests and responses", () => {
  let app: Express;
  let server: http.Server;
  let base: string;
  const born: { request: boolean; response: boolean }[] = [];
  beforeAll(async () => {
    app = express();
    app.use(express.json());
    app.post('/echo', (req, res) => {
      res
        .status(201)
        .set('x-seen', req.get('x-probe') ?? '')
        .json({
          body: req.body as unknown,
          sameApp: req.app === app && res.app === app,
          nodeClasses: req instanceof http.IncomingMessage && res instanceof http.ServerResponse,
        });
    });
    server = createApiServer(app, 300_000).listen(0, '127.0.0.1');
    // Before Express's own listener: what Node made, before Express moves anything.
    server.prependListener('request', (req, res) => {
      born.push({
        request: Object.getPrototypeOf(req) === app.request,
        response: Object.getPrototypeOf(res) === app.response,
      });
    });
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  it("are made on the app's request and response prototypes, so Express has nothing to move", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-probe': `call ${i}` },
        body: JSON.stringify({ i }),
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('x-seen')).toBe(`call ${i}`);
      await expect(res.json()).resolves.toEqual({ body: { i }, sameApp: true, nodeClasses: true });
    }
    expect(born).toEqual(Array.from({ length: 3 }, () => ({ request: true, response: true })));
  });
});
