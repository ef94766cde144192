import type { AppError } from '../../../shared/errors/appError.ts';
import type { ErrorCode } from '../../../shared/errors/codes.ts';
import type { ShapedError } from '../compatApi.ts';

type Mapped = { status: number; type: string };

// The status and `type` Anthropic gives the same situation, so its SDK raises the error class its
// users catch (BadRequestError 400, AuthenticationError 401, PermissionDeniedError 403,
// NotFoundError 404, RateLimitError 429, InternalServerError 500 and 529).
const invalid: Mapped = { status: 400, type: 'invalid_request_error' };
const billing: Mapped = { status: 402, type: 'billing_error' };
const overloaded: Mapped = { status: 529, type: 'overloaded_error' };

function mapped(code: ErrorCode, status: number): Mapped {
  switch (code) {
    case 'invalid_api_key':
    case 'api_key_revoked':
    case 'api_key_expired':
      return { status: 401, type: 'authentication_error' };
    case 'not_found':
    case 'model_not_found':
      return { status: 404, type: 'not_found_error' };
    case 'rate_limited':
      return { status: 429, type: 'rate_limit_error' };
    case 'file_too_large':
      return { status: 413, type: 'request_too_large' };
    // A spent balance or key cap: Anthropic's 402 for an account that cannot pay.
    case 'insufficient_credits':
    case 'key_spend_limit_reached':
      return billing;
    // The database or storage is away for now (with Retry-After): the SDK retries a 529.
    case 'service_unavailable':
      return overloaded;
    case 'invalid_request_body':
    case 'invalid_generation_prompt':
    case 'invalid_idempotency_key':
    case 'project_id_required':
    case 'unsupported_media_type':
      return invalid;
    default:
      if (status >= 500) return { status: 500, type: 'api_error' };
      if (status === 403) return { status, type: 'permission_error' };
      return { status, type: 'invalid_request_error' };
  }
}

/**
 * Anthropic's error body `{ type: "error", error: { type, message }, request_id }` at Anthropic's
 * status for the situation, with the platform's headers (Retry-After, x-ratelimit-*). `error.code`
 * adds the platform's code (docs/errors.md), which tells apart what one Anthropic type covers; the
 * request id is also in the `request-id` header (anthropicHeaders), which the SDK reads as `requestID`.
 */
export function anthropicError(error: AppError, requestId: string): ShapedError {
  const { status, type } = mapped(error.code, error.status);
  const issues = error.issues?.map((i) => `${i.path}: ${i.message}`).join('; ');
  const headers: Record<string, string> = { ...error.headers };
  // A spent balance does not come back by retrying: the SDK's own retries would only repeat it.
  if (type === billing.type) headers['x-should-retry'] = 'false';
  const message = issues ? `${error.message} (${issues})` : error.message;
  return {
    status,
    headers,
    body: { type: 'error', error: { type, message, code: error.code }, request_id: requestId },
  };
}
