import { createHash } from 'node:crypto';

import { describe, expect, it } from '@jest/globals';

import { hashPassword, legacyScryptHash, verifyPassword } from '../../shared/auth/passwords.ts';
import { verifierMatches } from '../../shared/oauth/pkce.ts';
import { isTokenOf, newOpaqueToken, openSuccessor, sealSuccessor } from '../../shared/oauth/tokens.ts';

describe('token formats', () => {
  it('mints prefixed tokens of 256 bits and recognises only their own kind', () => {
    const access = newOpaqueToken('access');
    expect(access).toMatch(/^svc_at_[0-9A-Za-z]{43}$/);
    expect(isTokenOf('access', access)).toBe(true);
    expect(isTokenOf('refresh', access)).toBe(false);
    expect(newOpaqueToken('refresh')).toMatch(/^svc_rt_/);
    expect(newOpaqueToken('code')).toMatch(/^svc_ac_/);
  });

  it('seals a successor pair that only the old refresh token opens', () => {
    const old = newOpaqueToken('refresh');
    const pair = {
      accessToken: 'a',
      refreshToken: 'r',
      accessExpiresAt: '2026-01-01T00:00:00.000Z',
      scope: 'x',
    };
    const sealed = sealSuccessor(old, pair);
    expect(sealed.toString('utf8')).not.toContain('accessToken');
    expect(openSuccessor(old, sealed)).toEqual(pair);
    expect(openSuccessor(newOpaqueToken('refresh'), sealed)).toBeNull();
  });
});

describe('PKCE', () => {
  it('accepts only the S256 of the verifier', () => {
    const verifier = 'a'.repeat(43);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    expect(verifierMatches(verifier, challenge)).toBe(true);
    expect(verifierMatches('b'.repeat(43), challenge)).toBe(false);
    // "plain" (the verifier as its own challenge) is not a method here.
    expect(verifierMatches(verifier, verifier)).toBe(false);
    expect(verifierMatches('short', challenge)).toBe(false);
  });
});

describe('passwords', () => {
  it('hashes with argon2id and still verifies old scrypt hashes, asking for a rehash', async () => {
    const hash = await hashPassword('s3cret pass');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    await expect(verifyPassword('s3cret pass', hash)).resolves.toEqual({ ok: true, needsRehash: false });
    await expect(verifyPassword('wrong', hash)).resolves.toEqual({ ok: false, needsRehash: false });
    const old = legacyScryptHash('s3cret pass');
    await expect(verifyPassword('s3cret pass', old)).resolves.toEqual({ ok: true, needsRehash: true });
    await expect(verifyPassword('wrong', old)).resolves.toEqual({ ok: false, needsRehash: false });
    await expect(verifyPassword('x', 'garbage')).resolves.toEqual({ ok: false, needsRehash: false });
  });
});
