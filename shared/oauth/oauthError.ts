/** RFC 6749 §5.2 (and RFC 7009 §2.2.1) error codes of the token and revoke endpoints. */
export type OauthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_token_type'
  | 'server_error'
  // RFC 8707 §2: a resource this server does not protect, or not the one granted.
  | 'invalid_target'
  // RFC 7591 §3.2.2, dynamic client registration.
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata';

const statusOf: Record<OauthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  unsupported_token_type: 400,
  server_error: 500,
  invalid_target: 400,
  invalid_redirect_uri: 400,
  invalid_client_metadata: 400,
};

/** A refusal of the token or revoke endpoint, answered as `{ error, error_description }`. */
export class OauthError extends Error {
  readonly error: OauthErrorCode;
  readonly status: number;
  /** The refusal ended tokens (a replayed code or refresh token): caches must forget them now. */
  readonly endedTokens: boolean;

  constructor(error: OauthErrorCode, description: string, options: { endedTokens?: boolean } = {}) {
    super(description);
    this.name = 'OauthError';
    this.error = error;
    this.status = statusOf[error];
    this.endedTokens = options.endedTokens ?? false;
  }
}
