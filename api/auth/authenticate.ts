import type { Principal } from '../../shared/auth/principal.ts';
import { toPrincipal } from '../../shared/db/queries/apiKeys.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { ipAllowed } from '../../shared/keys/ipAllowlist.ts';
import { sha256 } from '../../shared/primitives/ids.ts';
import type { KeyCache } from './keyCache.ts';

/** Resolves a bearer credential of another kind (OAuth access tokens register one); undefined = unknown. */
export type CredentialResolver = (
  credential: string,
  context: { ip: string | undefined },
) => Promise<Principal | undefined>;

const keyPattern = /^svc_sk_(test|live)_[0-9A-Za-z]{20,64}$/;

const invalidKey = () =>
  new AppError('invalid_api_key', 'Provide a valid API key as `Authorization: Bearer <key>`.', {
    headers: { 'WWW-Authenticate': 'Bearer realm="api"' },
  });

/**
 * Checks an API key in the order DESIGN.md fixes: unknown, revoked, expired, IP allowlist,
 * the creator's developer access. The key is looked up by the SHA-256 of the secret, so the lookup
 * time does not depend on how much of a guessed secret is right.
 * @throws AppError with the first failing check's code.
 */
export async function authenticateApiKey(
  keys: KeyCache,
  secret: string,
  ip: string | undefined,
): Promise<Principal> {
  if (!keyPattern.test(secret)) throw invalidKey();
  const row = await keys.find(sha256(secret));
  if (!row) throw invalidKey();
  if (row.revoked_at !== null) throw new AppError('api_key_revoked', 'This API key has been revoked.');
  if (row.expires_at !== null && Date.parse(row.expires_at) <= Date.now()) {
    throw new AppError('api_key_expired', 'This API key has expired.');
  }
  if (!ipAllowed(ip, row.ip_allowlist)) {
    throw new AppError(
      'api_key_ip_not_allowed',
      `Requests from ${ip ?? 'this address'} are not allowed for this key.`,
    );
  }
  if (!row.has_developer_access) {
    throw new AppError('developer_access_revoked', "The key's creator no longer has developer access.");
  }
  return toPrincipal(row);
}

export async function authenticate(
  keys: KeyCache,
  header: string | undefined,
  ip: string | undefined,
  resolvers: CredentialResolver[],
): Promise<Principal> {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  const credential = match?.[1];
  if (!credential) throw invalidKey();
  if (credential.startsWith('svc_sk_')) return authenticateApiKey(keys, credential, ip);
  for (const resolve of resolvers) {
    const principal = await resolve(credential, { ip });
    if (principal) return principal;
  }
  throw invalidKey();
}
