/** The public error codes of the API (spec "Errors"), with the HTTP status each one answers. */
export const errorStatus = {
  invalid_api_key: 401,
  api_key_revoked: 401,
  api_key_expired: 401,
  api_key_ip_not_allowed: 403,
  developer_access_revoked: 403,
  api_key_project_scope: 403,
  api_key_operation_scope: 403,
  not_found: 404,
  /** Beyond the spec: a compatible API's `model` names no route, alias or provider/model pair (api/compat/). */
  model_not_found: 404,
  method_not_allowed: 405,
  channel_route_not_found: 404,
  invalid_request_body: 422,
  invalid_cursor: 422,
  invalid_idempotency_key: 400,
  idempotency_key_reused: 409,
  idempotency_request_in_progress: 409,
  /** Beyond the spec: a replayed generation whose output went to the first caller (generation keeps nothing). */
  idempotent_output_discarded: 410,
  project_id_required: 422,
  invalid_generation_prompt: 422,
  invalid_image_aspect_ratio: 422,
  invalid_workflow_values: 422,
  file_too_large: 413,
  unsupported_media_type: 415,
  unsupported_export_format: 422,
  export_not_rendered: 409,
  video_not_ready: 409,
  /** Beyond the spec: a single byte range past the end of a download (RFC 9110 §15.5.17). */
  range_not_satisfiable: 416,
  key_spend_limit_reached: 402,
  insufficient_credits: 402,
  storage_quota_exceeded: 507,
  /** Beyond the spec: POST /mcp from a browser origin that is not allowed (MCP transport rule). */
  origin_not_allowed: 403,
  rate_limited: 429,
  internal_error: 500,
  /**
   * Beyond the spec: a part the platform depends on (the database, object storage) is unreachable for
   * now, as during a restart; answered with Retry-After, so a client retries instead of giving up.
   */
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(errorStatus, value);
}
