import http from 'node:http';
import type { Duplex } from 'node:stream';

import type { Logger } from '../../shared/observability/logger.ts';
import { randomBase62 } from '../../shared/primitives/ids.ts';

/** The status Node itself answers each parser refusal with, and what to tell the client. */
function describe(code: string | undefined): { status: number; message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'The request headers are larger than this server accepts.' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'The chunk extensions of the request body are too large.' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'The request was not received in time.' };
    case 'HPE_INVALID_EOF_STATE':
      return { status: 400, message: 'The connection ended before the whole request was received.' };
    default:
      return { status: 400, message: 'The request is not valid HTTP.' };
  }
}

// A client that neither reads the answer nor closes its side does not keep the socket longer.
const closeGraceMs = 5_000;

/**
 * Requests Node's HTTP parser refuses (oversized or malformed headers, a body cut short, a request
 * not received within the request timeout) never reach Express. Node would answer them with a bare
 * status line; this answers them with the error envelope (code invalid_request_body, the status Node
 * chose) and closes the connection. Nothing is written when part of an answer already went out or
 * the client is gone.
 */
export function answerClientErrors(server: http.Server, logger: Logger): void {
  // The parser may report again for the same socket (more data, then its end): one answer each.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    const { status, message } = describe(error.code);
    logger.debug({ code: error.code, status }, 'request refused by the HTTP parser');
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const requestId = `req_${randomBase62(24)}`;
    const body = JSON.stringify({ error: { code: 'invalid_request_body', message, requestId } });
    const head = [
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Bad Request'}`,
      'content-type: application/json; charset=utf-8',
      `content-length: ${Buffer.byteLength(body)}`,
      `x-request-id: ${requestId}`,
      'connection: close',
    ].join('\r\n');
    // end(), not destroy(): closing a socket with unread input resets it, and the client may then
    // lose the answer. The socket closes once the client closes its side too.
    socket.end(`${head}\r\n\r\n${body}`);
    setTimeout(() => socket.destroy(), closeGraceMs).unref();
  });
}
