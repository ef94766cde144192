import type { Request, Response } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import { newJobId } from '../../shared/jobs.ts';
import { clientGone } from '../clientGone.ts';
import type { AppDeps } from '../deps.ts';
import { awaitSyncJob } from '../routes/generation/billedJob.ts';
import type { TextDeltaRelay } from './textDeltaRelay.ts';

// Comment lines keep proxies and load balancers from closing a stream that waits on a slow model.
const keepaliveMs = 15_000;

export type TextBody = { text: string };

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Relays a text job as server-sent events: `delta` events `{ text }` as the worker publishes them,
 * then one `done` event whose data is exactly the non-streaming 201 body. The done event is built
 * from the job row, so it arrives even when deltas were lost (NOTIFY is not durable); the part of
 * the text the deltas did not carry is sent as one last delta first, so deltas always add up to
 * the final text. A client that disconnects cancels the job. A job that fails ends the stream with
 * an `error` event carrying the error envelope (the 201 status line is already out).
 *
 * The stream listens before `start` creates the job: a worker can pick a job up and publish its
 * first deltas before the insert's answer is back here. Deltas that arrive before the headers are
 * out wait for them. Errors of `start` (no credits, ...) are thrown before anything is sent.
 */
export async function streamTextJob<B extends TextBody>(
  deps: AppDeps,
  relay: TextDeltaRelay,
  req: Request,
  res: Response,
  start: (jobId: string) => Promise<unknown>,
  toBody: (result: unknown, costMinor: number) => B,
): Promise<void> {
  const jobId = newJobId();
  const gone = clientGone(res);
  let early: string[] | undefined = [];
  const write = (chunk: string) => {
    if (early) early.push(chunk);
    else if (!res.writableEnded && !res.destroyed) res.write(chunk);
  };
  let sent = '';
  let contiguous = true;
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
    write(frame('delta', { text: fresh }));
  });
  let started = false;
  const open = async () => {
    await start(jobId);
    started = true;
    res.status(201);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    const waiting = early ?? [];
    early = undefined;
    for (const chunk of waiting) write(chunk);
  };
  const keepalive = setInterval(() => write(': keepalive\n\n'), keepaliveMs);
  try {
    const { result, costMinor } = await awaitSyncJob(deps, req, res, { id: jobId, start: open }, gone.signal);
    const body = toBody(result, costMinor);
    if (body.text.length > sent.length && body.text.startsWith(sent)) {
      write(frame('delta', { text: body.text.slice(sent.length) }));
    }
    res.locals.responseBody = body;
    write(frame('done', body));
  } catch (error) {
    // Nothing is sent yet: the error middleware answers with the envelope and its status.
    if (!started) throw error;
    if (gone.signal.aborted) return;
    const known = error instanceof AppError ? error : undefined;
    if (!known) deps.logger.error({ err: error, requestId: req.requestId, jobId }, 'text stream failed');
    const envelope = {
      code: known?.code ?? 'internal_error',
      message: known?.message ?? 'The server failed to complete the request; retry with backoff.',
      requestId: req.requestId,
    };
    res.locals.responseBody = { error: envelope };
    write(frame('error', { error: envelope }));
  } finally {
    off();
    clearInterval(keepalive);
    gone.dispose();
    if (started) res.end();
  }
}
