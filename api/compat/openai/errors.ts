import type { AppError } from '../../../shared/errors/appError.ts';
import type { ErrorCode } from '../../../shared/errors/codes.ts';
import type { ShapedError } from '../compatApi.ts';

type Mapped = { status: number; type: string };

// The status and `type` OpenAI gives the same situation, so its SDK raises the error class its users
// catch (BadRequestError for 400, AuthenticationError 401, PermissionDeniedError 403,
// NotFoundError 404, RateLimitError 429). `code` stays the platform's, which docs/errors.md lists.
const invalid: Mapped = { status: 400, type: 'invalid_request_error' };
const quota: Mapped = { status: 429, type: 'insufficient_quota' };

function mapped(code: ErrorCode, status: number): Mapped {
  switch (code) {
    case 'invalid_api_key':
    case 'api_key_revoked':
    case 'api_key_expired':
      return { status: 401, type: 'invalid_request_error' };
    case 'rate_limited':
      return { status: 429, type: 'requests' };
    // OpenAI answers a spent quota 429 insufficient_quota; its SDK is told not to retry (headers).
    case 'insufficient_credits':
    case 'key_spend_limit_reached':
      return quota;
    case 'invalid_request_body':
    case 'invalid_generation_prompt':
    case 'invalid_image_aspect_ratio':
    case 'invalid_idempotency_key':
    case 'project_id_required':
    case 'unsupported_media_type':
      return invalid;
    default:
      if (status >= 500) return { status, type: 'server_error' };
      if (status === 403) return { status, type: 'permission_error' };
      return { status, type: 'invalid_request_error' };
  }
}

/** The request field an error is about, as OpenAI names it in `param` (the first issue's path). */
function paramOf(error: AppError): string | null {
  if (error.code === 'model_not_found') return 'model';
  return error.issues?.[0]?.path ?? null;
}

/**
 * OpenAI's error envelope `{ error: { message, type, param, code } }` at OpenAI's status for the
 * situation, with the platform's headers (Retry-After, x-ratelimit-*, WWW-Authenticate). The request
 * id is in `x-request-id`, which the SDK reads as `requestID`.
 */
export function openAiError(error: AppError, _requestId: string): ShapedError {
  const { status, type } = mapped(error.code, error.status);
  const issues = error.issues?.map((i) => `${i.path}: ${i.message}`).join('; ');
  const headers: Record<string, string> = { ...error.headers };
  // A spent quota does not come back by retrying: the SDK's own retries would only repeat it.
  if (type === quota.type) headers['x-should-retry'] = 'false';
  return {
    status,
    headers,
    body: {
      error: {
        message: issues ? `${error.message} (${issues})` : error.message,
        type,
        param: paramOf(error),
        code: error.code,
      },
    },
  };
}
