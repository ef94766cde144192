import type { Request, Response } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import type { ErrorCode } from '../../shared/errors/codes.ts';
import type { BilledJobDeps } from '../../shared/jobs/billedJob.ts';
import { newJobId } from '../../shared/jobs/createJob.ts';
import { awaitSyncJob } from '../../shared/jobs/syncJob.ts';
import type { StreamLeases } from '../../shared/streams/streamLeases.ts';
import { clientGone } from '../http/clientGone.ts';
import type { OpenStreams } from './openStreams.ts';
import { releaseWhenClosed } from './releaseWhenClosed.ts';
import type { TextDeltaRelay } from './textDeltaRelay.ts';
import { defaultTextStreamOptions, type TextStreamOptions } from './textStreamOptions.ts';

export type TextBody = { text: string };

/** A text stream waits as a synchronous job does, holding one of its workspace's stream leases. */
export type TextStreamDeps = Omit<BilledJobDeps, 'jobs'> & {
  streamLeases: StreamLeases;
  openStreams: OpenStreams;
  textStream?: Partial<TextStreamOptions>;
};

/** One server-sent event. */
export function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The error a failed stream ends with, as the platform's envelope names it. */
export type StreamFailure = { code: ErrorCode; message: string; requestId: string };

/**
 * How a text stream is written: POST /text's events (nativeTextStream), or a compatible API's
 * (api/compat/): the success status, the frame of a delta, the last frames, the frame of a failure.
 * `logged` is what the request log keeps of the answer.
 */
export type TextStreamFormat<B extends TextBody> = {
  status: number;
  delta(text: string): string;
  done(body: B): string;
  error(failure: StreamFailure): { frame: string; logged: unknown };
  logged?(body: B): unknown;
};

/** POST /text's stream: `delta` events, then `done` with the 201 body, or `error` with the envelope. */
export function nativeTextStream<B extends TextBody>(): TextStreamFormat<B> {
  return {
    status: 201,
    delta: (text) => frame('delta', { text }),
    done: (body) => frame('done', body),
    error: (failure) => ({ frame: frame('error', { error: failure }), logged: { error: failure } }),
  };
}

/**
 * Relays a text job as server-sent events: `delta` events `{ text }` as the worker publishes them,
 * then one `done` event whose data is exactly the non-streaming 201 body. The done event is built
 * from the job row, so it arrives even when deltas were lost (NOTIFY is not durable); the part of
 * the text the deltas did not carry is sent as one last delta first, so deltas always add up to
 * the final text. A client that disconnects cancels the job. A job that fails ends the stream with
 * an `error` event carrying the error envelope (the 201 status line is already out).
 *
 * The stream takes one of its workspace's stream leases before anything else (beyond the limit:
 * rate_limited, and no job). It listens before `start` creates the job: a worker can pick a job up
 * and publish its first deltas before the insert's answer is back here. Errors of `start` (no
 * credits, ...) are thrown before anything is sent.
 *
 * Backpressure: text that cannot be written yet (before the headers are out, or while the socket's
 * buffer is full because the reader does not keep up) is kept as one string and sent as one delta
 * when the socket drains, so a slow reader costs at most the socket's buffer and about twice the
 * reply (the text that waited, then done, whose body carries the whole text; bounded by maxTokens),
 * never a frame per token; no keep-alives are written meanwhile. Text is neither lost nor repeated.
 * The end is written whatever the reader does; not flushed within `stallMs`, the connection is cut.
 */
export async function streamTextJob<B extends TextBody>(
  deps: TextStreamDeps,
  relay: TextDeltaRelay,
  req: Request,
  res: Response,
  /** The done event's body; awaited before the last events go out (the response cache stores it first). */
  toBody: (result: unknown, costMinor: number) => B | Promise<B>,
  start: (jobId: string) => Promise<unknown>,
  format: TextStreamFormat<B> = nativeTextStream<B>(),
): Promise<void> {
  const options = { ...defaultTextStreamOptions, ...deps.textStream };
  const lease = await deps.streamLeases.acquire(
    req.principal!.workspaceId,
    deps.config.syncTimeoutMs + options.stallMs,
  );
  releaseWhenClosed(res, lease);
  const jobId = newJobId();
  const gone = clientGone(res);
  let started = false;
  let headersOut = false;
  // A write found the socket's buffer full: nothing more until it drains.
  let blocked = false;
  // Text taken from the deltas but not written yet.
  let pending = '';
  let sent = '';
  let contiguous = true;
  const write = (chunk: string) => {
    if (res.writableEnded || res.destroyed) return;
    if (res.write(chunk) || blocked) return;
    blocked = true;
    res.once('drain', () => {
      blocked = false;
      flush();
    });
  };
  /** Sends the pending text as one delta; `force` writes it into a full buffer too (the last events). */
  const flush = (force = false) => {
    if (pending === '' || !headersOut || (blocked && !force)) return;
    const text = pending;
    pending = '';
    write(format.delta(text));
  };
  const off = relay.on(jobId, (delta) => {
    // A gap means a notification was lost: stop relaying and let the done event fill in the rest.
    if (!contiguous) return;
    if (delta.offset > sent.length) {
      contiguous = false;
      return;
    }
    // Offsets already sent are repeats (a retried attempt regenerating the same reply).
    const fresh = delta.text.slice(sent.length - delta.offset);
    if (fresh === '') return;
    sent += fresh;
    pending += fresh;
    flush();
  });
  const open = async () => {
    await start(jobId);
    started = true;
    res.status(format.status);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    deps.openStreams.track('text', res);
    headersOut = true;
    flush();
  };
  const keepalive = setInterval(() => {
    if (headersOut && !blocked) write(': keepalive\n\n');
  }, options.keepaliveMs);
  try {
    const { result, costMinor } = await awaitSyncJob(deps, req, { id: jobId, start: open }, gone.signal);
    const body = await toBody(result, costMinor);
    if (body.text.length > sent.length && body.text.startsWith(sent)) {
      pending += body.text.slice(sent.length);
      sent = body.text;
    }
    res.locals.responseBody = format.logged ? format.logged(body) : body;
    // The last events go out whether or not the reader keeps up: they are bounded by the reply.
    flush(true);
    write(format.done(body));
  } catch (error) {
    // Nothing is sent yet: the error middleware answers with the envelope and its status.
    if (!started) throw error;
    if (gone.signal.aborted) return;
    const known = error instanceof AppError ? error : undefined;
    if (!known) deps.logger.error({ err: error, requestId: req.requestId, jobId }, 'text stream failed');
    const failed = format.error({
      code: known?.code ?? 'internal_error',
      message: known?.message ?? 'The server failed to complete the request; retry with backoff.',
      requestId: req.requestId,
    });
    res.locals.responseBody = failed.logged;
    flush(true);
    write(failed.frame);
  } finally {
    off();
    clearInterval(keepalive);
    gone.dispose();
    if (started && !res.writableEnded && !res.destroyed) {
      res.end();
      // A reader that never reads again would keep the connection, and the reply buffered for it.
      const cut = setTimeout(() => res.destroy(), options.stallMs);
      res.once('finish', () => clearTimeout(cut));
      res.once('close', () => clearTimeout(cut));
    }
  }
}
