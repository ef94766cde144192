import http from 'node:http';
import net from 'node:net';

import { afterEach, describe, expect, it } from '@jest/globals';

import { trackConnections } from '../../api/http/connections.ts';

let server: http.Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

async function serve(handler: http.RequestListener) {
  server = http.createServer(handler);
  const connections = trackConnections(server);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  // As the api stops: no new connections, then every connection closed once it is idle.
  const stop = () =>
    new Promise<void>((resolve) => {
      server!.close(() => resolve());
      connections.closeWhenIdle();
    });
  return { port, stop };
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
  });
}

const received = (socket: net.Socket) =>
  new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('close', () => resolve(text));
  });

describe('trackConnections', () => {
  it('closes a connection that never sent a request, and one idle after its request', async () => {
    const { port, stop } = await serve((_req, res) => res.end('ok'));
    const unused = await connect(port);
    const used = await connect(port);
    const usedOutput = received(used);
    // Stop only once the answer is back: the connection is then idle after its request.
    const answered = new Promise((resolve) => used.once('data', resolve));
    used.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await answered;
    await Promise.all([received(unused), stop()]);
    expect(await usedOutput).toMatch(/^HTTP\/1.1 200[\s\S]*ok$/);
  });

  it('lets a request in flight finish, answered with Connection: close, then closes', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const { port, stop } = await serve((_req, res) => {
      arrived();
      void released.then(() => res.end('late'));
    });
    const socket = await connect(port);
    const output = received(socket);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // Stop while the handler holds the request (not before it has even arrived).
    await inFlight;
    const stopped = stop();
    release();
    await stopped;
    const text = await output;
    expect(text).toMatch(/^HTTP\/1.1 200/);
    expect(text).toMatch(/\r\nConnection: close\r\n/i);
    expect(text).toMatch(/late$/);
  });
});
