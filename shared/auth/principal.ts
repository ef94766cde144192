/** Who is calling: the credential behind a request, resolved once by the auth middleware. */
export type ScopeLevel = 'app' | 'package' | 'operation';
export type Scope = { level: ScopeLevel; packages: string[]; operations: string[] };
export type ProjectRef = { id: string; name: string };

export type Principal = {
  credentialType: 'api_key' | 'oauth_access_token';
  /** Stable id of the credential (key id or token id): idempotency keys and logs are kept per credential. */
  credentialId: string;
  keyId: string | null;
  oauthAppId: string | null;
  name: string;
  hint: string;
  workspaceId: string;
  currency: string;
  memberId: string;
  livemode: boolean;
  scope: Scope;
  /** Active projects the credential can act on, oldest first. */
  projects: ProjectRef[];
  monthlySpendCapMinor: number | null;
  rateLimitPerMinute: number | null;
  /** The workspace's tokens per minute (shared/limits/tokenLimits.ts); absent or null: no limit. */
  tokensPerMinute?: number | null;
  /** The key's own tokens per minute, besides its workspace's; absent or null: no limit. */
  keyTokensPerMinute?: number | null;
  createdAt: string;
  expiresAt: string | null;
  /** An access token's RFC 8707 resource (see shared/oauth/resources.ts); absent for keys. */
  audience?: string | null;
};

/** Does the scope cover the capability `operationId` (`<package>.<operation>`)? */
export function scopeAllows(scope: Scope, operationId: string): boolean {
  switch (scope.level) {
    case 'app':
      return true;
    case 'package':
      return scope.packages.includes(operationId.split('.')[0]!);
    case 'operation':
      return scope.operations.includes(operationId);
    default: {
      const never: never = scope.level;
      throw new Error(`unknown scope level ${String(never)}`);
    }
  }
}
