import { timingSafeEqual } from 'node:crypto';

import { sha256 } from '../primitives/ids.ts';

// RFC 7636 §4.1: 43 to 128 unreserved characters.
const verifierShape = /^[A-Za-z0-9._~-]{43,128}$/;
// base64url of a sha256: 43 characters, no padding.
const challengeShape = /^[A-Za-z0-9_-]{43}$/;

export const isCodeChallenge = (value: unknown): value is string =>
  typeof value === 'string' && challengeShape.test(value);

/** S256 only (OAuth 2.1): BASE64URL(SHA256(verifier)) must equal the challenge the code was bound to. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!verifierShape.test(verifier)) return false;
  const actual = Buffer.from(sha256(verifier).toString('base64url'));
  const expected = Buffer.from(challenge);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
