import type { RequestHandler } from 'express';

/**
 * The header naming the project a call of a key spanning several projects is billed against: the
 * Messages API has none, so an SDK sets it among its `defaultHeaders`.
 */
export const projectHeader = 'svc-project';

/**
 * What Anthropic's clients send and read, in the platform's terms, before the pipeline runs: a
 * key in `x-api-key` (older SDKs' way) becomes the bearer credential authentication reads (SDKs
 * from 1.0 send `Authorization: Bearer`, taken as it is), and the request id is echoed as
 * `request-id`, the header the SDK reads as `requestID` / `_request_id`. `anthropic-version` and
 * `anthropic-beta` are accepted; answers have the current version's shapes, and the version decides
 * only whether sampling parameters may be sent (messageRequest.ts).
 */
export const anthropicHeaders: RequestHandler = (req, res, next) => {
  const key = req.get('x-api-key');
  // Sent both, Anthropic takes x-api-key: so does the platform.
  if (key !== undefined) req.headers.authorization = `Bearer ${key}`;
  res.setHeader('request-id', req.requestId);
  next();
};
