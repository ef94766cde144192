import type { Response } from 'express';

import { tokenHeaders, type TokenWindowState } from '../../shared/limits/tokenLimits.ts';

/**
 * A model call's token reservation (startBilledJob's `tokens`): `count`, the most it can use, and
 * the x-ratelimit-*-tokens headers of the tighter window set on its answer once it is reserved.
 */
export function tokenReservation(res: Response, count: number) {
  return {
    count,
    onTokens: (state: TokenWindowState) => {
      if (!res.headersSent) res.set(tokenHeaders(state));
    },
  };
}
