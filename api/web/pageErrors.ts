import type { ErrorRequestHandler } from 'express';

import type { Logger } from '../../shared/observability/logger.ts';
import { sendErrorPage } from './html.ts';

/** The browser pages' last handler: an error page, never the API's JSON; unexpected failures logged. */
export function pageErrors(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const status = (error as { status?: number }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return sendErrorPage(res, status, 'Bad request', 'The form could not be read.');
    }
    logger.error({ err: error, requestId: req.requestId }, 'page failed');
    sendErrorPage(res, 500, 'Something went wrong', 'The server failed; try again in a moment.');
  };
}
