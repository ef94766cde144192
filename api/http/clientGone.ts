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

/** Runs `work` with a signal that aborts (ClientGoneError) if the client goes away meanwhile. */
export async function whileConnected<T>(
  res: Response,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const gone = clientGone(res);
  try {
    return await work(gone.signal);
  } finally {
    gone.dispose();
  }
}

/**
 * The signal of clientGone alone, for work that outlives no response: once the response is sent,
 * its closing aborts nothing, and the listener goes with the response.
 */
export function clientSignal(res: Response): AbortSignal {
  return clientGone(res).signal;
}
