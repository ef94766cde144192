import { hash, randomFillSync } from 'node:crypto';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// CSPRNG bytes fetched 4 KiB at a time: one getrandom call per ~170 ids instead of one per id
// (what crypto.randomUUID's own cache does).
const entropy = Buffer.allocUnsafe(4096);
let entropyOffset = entropy.length;

function randomByte(): number {
  if (entropyOffset === entropy.length) {
    randomFillSync(entropy);
    entropyOffset = 0;
  }
  return entropy[entropyOffset++]!;
}

/** `length` characters of base62 from the CSPRNG, without modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    // 248 = 62 * 4: bytes at or above it would skew the distribution.
    if (byte < 248) out += alphabet[byte % 62];
  }
  return out;
}

/** Opaque identifier with a type prefix, e.g. `job_3k9…`; 20 base62 characters ≈ 119 bits. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(20)}`;
}

/** API key secrets carry 33 base62 characters ≈ 196 bits (DESIGN.md: at least 190). */
export function newKeySecret(livemode: boolean): string {
  return `svc_sk_${livemode ? 'live' : 'test'}_${randomBase62(33)}`;
}

// One-shot: every authenticated request hashes its key, and a Hash object per call costs more.
export function sha256(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}
