import type { Response } from 'express';

import { frame } from './textStream.ts';

/**
 * A streamed POST /text answered from the response cache: the same events a generated stream ends
 * with, at once: the whole text as one `delta` (deltas always add up to the text; how the original
 * was cut into deltas is not kept), then `done` with the body. Nothing is waited for, so no stream
 * lease is taken.
 */
export function replayTextStream(res: Response, body: Record<string, unknown> & { text?: unknown }): void {
  res.status(201);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.locals.responseBody = body;
  const text = typeof body.text === 'string' ? body.text : '';
  res.end((text === '' ? '' : frame('delta', { text })) + frame('done', body));
}
