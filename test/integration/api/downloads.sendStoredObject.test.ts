import http from 'node:http';
import { Readable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';

import { sendStoredObject } from '../../../api/downloads/sendStoredObject.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';

// An object far larger than any socket buffer, produced a chunk at a time as storage would.
const size = 512 * 1024 * 1024;
const chunk = Buffer.alloc(64 * 1024, 7);

let source: Readable | undefined;
let handled: Promise<void> | undefined;
let server: Awaited<ReturnType<typeof listenOnLoopback>>;

beforeAll(async () => {
  const app = express();
  app.get('/object', (req, res) => {
    const failing = req.query.fail === '1';
    const store = {
      get: async () => {
        let sent = 0;
        source = new Readable({
          read() {
            sent += chunk.length;
            // Storage breaking off after a few chunks, as a dropped S3 connection would.
            if (failing && sent > 4 * chunk.length) this.destroy(new Error('storage went away'));
            else this.push(sent > size ? null : chunk);
          },
        });
        return source;
      },
    };
    const sending = sendStoredObject(req, res, store, {
      key: 'k',
      sizeBytes: size,
      contentType: 'application/octet-stream',
      etag: '"e"',
    });
    // Read by the test when it awaits `handled`; never an unhandled rejection meanwhile.
    sending.catch(() => {});
    handled = sending;
  });
  server = await listenOnLoopback(app);
});
afterAll(() => server.close());

describe('sendStoredObject', () => {
  it('stops reading from storage when the client disconnects mid-body', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${server.origin}/object`, (res) => {
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-length']).toBe(String(size));
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (error) => {
        if ((error as { code?: string }).code !== 'ECONNRESET') reject(error);
      });
    });
    // The handler settles (no unhandled rejection) and the source is destroyed, not drained.
    await handled;
    for (let i = 0; i < 40 && !source!.destroyed; i++) await new Promise((r) => setTimeout(r, 25));
    expect(source!.destroyed).toBe(true);
    expect(source!.readableEnded).toBe(false);
  });

  it('cuts the response off and reports the error when storage fails mid-body', async () => {
    const received = await new Promise<number>((resolve, reject) => {
      http
        .get(`${server.origin}/object?fail=1`, (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('error', () => resolve(bytes));
          res.on('close', () => resolve(bytes));
        })
        .on('error', reject);
    });
    expect(received).toBeLessThan(size);
    await expect(handled).rejects.toThrow('storage went away');
  });
});
