import { argon2, randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const argon2Async = promisify(argon2);
const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, length: number) => Promise<Buffer>;

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane): ~50 ms here, off the event loop.
const params = { memory: 19_456, passes: 2, parallelism: 1, tagLength: 32 } as const;

/** An argon2id hash in the PHC string format, with Node's own argon2 (no native add-on to install). */
export async function hashPassword(password: string): Promise<string> {
  const nonce = randomBytes(16);
  const tag = await argon2Async('argon2id', { message: password, nonce, ...params });
  const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
  return `$argon2id$v=19$m=${params.memory},t=${params.passes},p=${params.parallelism}$${b64(nonce)}$${b64(tag)}`;
}

async function verifyArgon2(password: string, stored: string): Promise<boolean> {
  const match = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(
    stored,
  );
  if (!match) return false;
  const [, m, t, p, salt, hash] = match;
  const expected = Buffer.from(hash!, 'base64');
  const actual = await argon2Async('argon2id', {
    message: password,
    nonce: Buffer.from(salt!, 'base64'),
    memory: Number(m),
    passes: Number(t),
    parallelism: Number(p),
    tagLength: expected.length,
  });
  return timingSafeEqual(actual, expected);
}

/**
 * The format member passwords were stored in before argon2id: `scrypt$<salt>$<hash>`. Still verified
 * (and replaced at the next sign-in); written only by tests that stand for members created back then.
 */
export function legacyScryptHash(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64')}$${scryptSync(password, salt, 32).toString('base64')}`;
}

async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}

const verifications = { total: 0, running: 0, peak: 0 };

/**
 * Verifications this process has started, how many run now and the most that ran at once since the
 * last reset: each holds ~19 MiB and a libuv thread for ~50 ms, which is what sign-in limits bound.
 */
export function passwordVerificationStats(): Readonly<typeof verifications> {
  return { ...verifications };
}

/** Starts a new peak measurement (the highest count of verifications running at once). */
export function resetPasswordVerificationPeak(): void {
  verifications.peak = verifications.running;
}

/**
 * Checks a password against a stored hash of either generation.
 * @returns ok, and whether the hash should be replaced by an argon2id one (an older scheme).
 */
export async function verifyPassword(
  password: string,
  stored: string,
): Promise<{ ok: boolean; needsRehash: boolean }> {
  verifications.total += 1;
  verifications.running += 1;
  verifications.peak = Math.max(verifications.peak, verifications.running);
  try {
    if (stored.startsWith('$argon2id$')) {
      return { ok: await verifyArgon2(password, stored), needsRehash: false };
    }
    const ok = await verifyScrypt(password, stored);
    return { ok, needsRehash: ok };
  } finally {
    verifications.running -= 1;
  }
}

/** A hash to compare against when no account matched, so unknown emails take as long as known ones. */
export const decoyHash = await hashPassword(randomBytes(16).toString('hex'));
