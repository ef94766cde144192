import type { Response } from 'express';

import type { StreamLease } from '../../shared/streams/streamLeases.ts';

/** Releases `lease` when the response is over: finished and flushed, or its connection gone. */
export function releaseWhenClosed(res: Response, lease: StreamLease): void {
  // The client may have gone while the lease was being taken: 'close' has then fired already.
  if (res.closed || res.destroyed) lease.release();
  else res.once('close', () => lease.release());
}
