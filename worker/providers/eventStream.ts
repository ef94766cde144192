import http from 'node:http';
import https from 'node:https';

import { APIConnectionError, APIError, APIUserAbortError } from 'openai';

/**
 * A streamed POST to an OpenAI-compatible API over node:http, read as server-sent events as they
 * arrive. The official SDK goes through fetch and web streams and costs about five times the CPU
 * per streamed answer (a millisecond against a fifth, on the gateway bench), which under load is
 * most of a worker's time per model call. Failures are the SDK's own error classes, made as the SDK
 * makes them, so openAiFailure reads both paths alike.
 */

/** Where an entry's streamed calls go: one keep-alive agent per entry, its headers built once. */
export type EventStreamTarget = {
  url: URL;
  request: typeof http.request;
  agent: http.Agent;
  headers: Record<string, string>;
};

export function eventStreamTarget(baseUrl: string, apiKey: string | undefined, path: string): EventStreamTarget {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}${path}`);
  const secure = url.protocol === 'https:';
  return {
    url,
    request: secure ? https.request : http.request,
    agent: secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true }),
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': 'svc-platform',
      // A keyless server (a local vLLM or Ollama) gets no Authorization header at all.
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    },
  };
}


// An error answer is read whole to tell its reason; past this it is cut.
const errorBodyLimit = 64 * 1024;
// After the completion sentinel the rest of the answer is read off so its connection can be reused;
// one that never ends is closed.
const drainMs = 5_000;

function headersOf(res: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

function errorAnswer(status: number, text: string, headers: Headers): APIError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return APIError.generate(status, body as object | undefined, body === undefined ? text : undefined, headers);
}

/**
 * POSTs `body` and hands each server-sent event's JSON to `onJson` in order, resolving at the
 * completion sentinel (`data: [DONE]`) or the answer's end, as the SDK's streams do. An error event
 * or an `{"error": …}` payload rejects as the SDK's APIError without a status; data that is not JSON
 * as the SDK's SyntaxError; a status outside 2xx as APIError.generate's class with the parsed body;
 * a connection that fails or drops mid-answer as APIConnectionError (its cause carries the code);
 * `signal` as APIUserAbortError. A throw from `onJson` rejects with that error and closes the
 * connection.
 */
export function postEventStream(
  target: EventStreamTarget,
  body: string,
  signal: AbortSignal,
  onJson: (value: unknown) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let req: http.ClientRequest;
    // `keep`: the answer was read to its end, so its connection can serve another call.
    const finish = (error?: unknown, keep = false) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else {
        if (!keep) req.destroy();
        reject(error);
      }
    };
    const onAbort = () => finish(new APIUserAbortError());
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });

    const send = (retryStale: boolean) => {
      let answered = false;
      req = target.request(target.url, {
        method: 'POST',
        agent: target.agent,
        headers: { ...target.headers, 'content-length': String(Buffer.byteLength(body)) },
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the server closed while idle fails before any answer: once, anew.
        if (!answered && retryStale && req.reusedSocket && error.code === 'ECONNRESET' && !settled) {
          send(false);
          return;
        }
        finish(new APIConnectionError({ cause: error }));
      });
      req.on('response', (res) => {
        answered = true;
        res.setEncoding('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) return readError(res, status);
        readEvents(res);
      });
      req.end(body);
    };

    // An answer, events or an error's body, that fails or closes before its end: the provider dropped it.
    const watchCutOff = (res: http.IncomingMessage, onClose?: () => void) => {
      const cutOff = (cause: unknown) => finish(new APIConnectionError({ cause: cause as Error }));
      res.on('error', cutOff);
      res.on('close', () => {
        onClose?.();
        if (!res.complete) cutOff(Object.assign(new Error('answer cut off'), { code: 'ECONNRESET' }));
      });
    };

    const readError = (res: http.IncomingMessage, status: number) => {
      let text = '';
      res.on('data', (piece: string) => {
        if (text.length < errorBodyLimit) text += piece;
      });
      res.on('end', () => finish(errorAnswer(status, text.slice(0, errorBodyLimit), headersOf(res)), true));
      watchCutOff(res);
    };

    const readEvents = (res: http.IncomingMessage) => {
      let drain: NodeJS.Timeout | undefined;
      const parser = eventParser((data, event) => {
        if (settled) return;
        if (data === '[DONE]') {
          finish();
          res.resume();
          drain = setTimeout(() => res.destroy(), drainMs).unref();
          return;
        }
        let value: unknown;
        try {
          value = JSON.parse(data);
        } catch {
          throw new SyntaxError('Error reading response: malformed server-sent event JSON.');
        }
        const error = (value as { error?: unknown } | null)?.error;
        if (event === 'error') throw new APIError(undefined, (error ?? value) as object, undefined, headersOf(res));
        if (error) throw new APIError(undefined, error as object, undefined, headersOf(res));
        onJson(value);
      });
      res.on('data', (piece: string) => {
        if (settled) return;
        try {
          parser(piece);
        } catch (error) {
          finish(error);
        }
      });
      res.on('end', () => {
        clearTimeout(drain);
        if (settled) return;
        try {
          parser('\n\n');
          finish();
        } catch (error) {
          finish(error);
        }
      });
      watchCutOff(res, () => clearTimeout(drain));
    };

    send(true);
  });
}

/**
 * A server-sent events parser (the WHATWG rules that matter here: lines end in CRLF, LF or CR; `data`
 * lines join with LF; a blank line dispatches; comments and unknown fields are skipped). Fed text in
 * any pieces; a dispatch with no data is no event.
 */
export function eventParser(dispatch: (data: string, event: string | undefined) => void): (text: string) => void {
  let partial = '';
  let data: string | undefined;
  let event: string | undefined;
  let lastWasCr = false;
  const line = (text: string) => {
    if (text === '') {
      if (data !== undefined) dispatch(data, event);
      data = undefined;
      event = undefined;
      return;
    }
    if (text.charCodeAt(0) === 58 /* : */) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') data = data === undefined ? value : `${data}\n${value}`;
    else if (field === 'event') event = value;
  };
  return (text) => {
    let start = 0;
    // A CRLF split across two pieces: the LF that opens this piece ends nothing new.
    if (lastWasCr && text.charCodeAt(0) === 10) start = 1;
    lastWasCr = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      line(partial + text.slice(start, i));
      partial = '';
      if (c === 13) {
        if (i + 1 === text.length) lastWasCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    partial += text.slice(start);
  };
}
