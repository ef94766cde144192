import { randomBase62, sha256 } from '../primitives/ids.ts';
import { openJson, sealJson } from '../primitives/sealedBox.ts';

/** Token formats of the spec ("OAuth 2.1 apps"): codes, access and refresh tokens, client secrets. */
export const tokenPrefix = {
  code: 'svc_ac_',
  access: 'svc_at_',
  refresh: 'svc_rt_',
} as const;

/** Lifetimes the spec fixes (Limits table): code ten minutes, access one hour, refresh 30 days. */
export const lifetimeMs = {
  code: 10 * 60_000,
  access: 60 * 60_000,
  refresh: 30 * 24 * 60 * 60_000,
} as const;

// 43 base62 characters ≈ 256 bits: guessing any live token is out of reach.
const randomLength = 43;

export function newOpaqueToken(kind: keyof typeof tokenPrefix): string {
  return `${tokenPrefix[kind]}${randomBase62(randomLength)}`;
}

const shapes: Record<keyof typeof tokenPrefix, RegExp> = {
  code: /^svc_ac_[0-9A-Za-z]{43}$/,
  access: /^svc_at_[0-9A-Za-z]{43}$/,
  refresh: /^svc_rt_[0-9A-Za-z]{43}$/,
};

/** Is `value` shaped like a token of this kind? Checked before any lookup. */
export function isTokenOf(kind: keyof typeof tokenPrefix, value: unknown): value is string {
  return typeof value === 'string' && shapes[kind].test(value);
}

/** Tokens are stored as their sha256 only (a leaked table grants nothing). */
export const hashToken = (token: string): Buffer => sha256(token);

/** What a person or operator may see of a token: its kind and last four characters. */
export const tokenHint = (token: string): string => `${token.slice(0, 7)}…${token.slice(-4)}`;

/** The pair a refresh returns, as kept sealed for the grace window. */
export type SealedPair = {
  accessToken: string;
  refreshToken: string;
  accessExpiresAt: string;
  scope: string;
};

// The key comes from the old refresh token itself: only a caller holding it can open the successor,
// and the database alone holds nothing usable.
const boxKey = (refreshToken: string) => ({
  secret: refreshToken,
  salt: 'svc-oauth',
  info: 'successor pair v1',
});

export function sealSuccessor(oldRefreshToken: string, pair: SealedPair): Buffer {
  return sealJson(boxKey(oldRefreshToken), pair);
}

/** @returns the pair, or null when the box was not sealed for this token. */
export function openSuccessor(oldRefreshToken: string, sealed: Buffer): SealedPair | null {
  return openJson<SealedPair>(boxKey(oldRefreshToken), sealed);
}
