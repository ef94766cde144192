import net from 'node:net';

export type FormPart =
  { name: string; value: string } | { name: string; filename: string; contentType: string; data: Buffer };

/** A multipart/form-data body of `parts`, and the Content-Type that goes with it. */
export function multipartBody(parts: FormPart[]): { body: Buffer; contentType: string } {
  const boundary = `raw-${Math.random().toString(36).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const head =
      'value' in part
        ? `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n`
        : `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"; filename="${part.filename}"\r\n` +
          `Content-Type: ${part.contentType}\r\n\r\n`;
    chunks.push(
      Buffer.from(head),
      'value' in part ? Buffer.from(part.value) : part.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

export type RawResponse = { status: number; headers: Record<string, string>; body: string };

/** Parses what a server wrote on a connection that carried one request (undefined if nothing). */
export function parseResponse(raw: Buffer): RawResponse | undefined {
  const text = raw.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4) };
}

export type RawClient = {
  socket: net.Socket;
  /** Resolves once the first `sendBytes` of the body have been handed to the kernel. */
  sent: Promise<void>;
  /** Resolves when the connection has closed (either side), with everything the server wrote. */
  closed: Promise<Buffer>;
};

/**
 * A client on a plain TCP connection that sends a request's headers (with the full body's
 * Content-Length) and then only the first `sendBytes` of the body: what a client that disconnects
 * or stalls mid-upload does. What happens next is the caller's: `socket.destroy()`, or silence.
 */
export function sendPartially(
  origin: string,
  request: { path: string; headers: Record<string, string>; body: Buffer; sendBytes: number },
): RawClient {
  const url = new URL(origin);
  const socket = net.connect(Number(url.port), url.hostname);
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const closed = new Promise<Buffer>((resolve) => {
    socket.on('close', () => resolve(Buffer.concat(received)));
  });
  // A server that answers and closes early resets a connection still writing: not the test's concern.
  socket.on('error', () => {});
  const head =
    `POST ${request.path} HTTP/1.1\r\nHost: ${url.host}\r\n` +
    Object.entries({ ...request.headers, 'Content-Length': String(request.body.length) })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    '\r\n';
  const sent = new Promise<void>((resolve, reject) => {
    socket.once('connect', () => {
      socket.write(head);
      socket.write(request.body.subarray(0, request.sendBytes), (error) =>
        error ? reject(error) : resolve(),
      );
    });
  });
  return { socket, sent, closed };
}
