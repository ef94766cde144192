import type { Response } from 'express';

/** The reason a request's work stops when its client went away: nobody is left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('client disconnected');
    this.name = 'ClientGoneError';
  }
}

/** Aborts (with ClientGoneError) when the client goes away before its response was sent. */
export function clientGone(res: Response): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) controller.abort(new ClientGoneError());
  };
  res.on('close', onClose);
  return { signal: controller.signal, dispose: () => res.off('close', onClose) };
}
