import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** Where a box's key comes from: a secret only its opener holds, and HKDF's salt and context. */
export type BoxKey = { secret: string; salt: string; info: string };

const keyOf = ({ secret, salt, info }: BoxKey) => Buffer.from(hkdfSync('sha256', secret, salt, info, 32));

/**
 * Seals `value` (as JSON) with AES-256-GCM under a key derived from `key.secret`, so what is stored
 * opens for nobody who lacks that secret: iv (12 bytes) + tag (16) + ciphertext.
 */
export function sealJson(key: BoxKey, value: unknown): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(key), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The sealed value, or null when the box was not sealed under this key (or was altered). */
export function openJson<T>(key: BoxKey, sealed: Buffer): T | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(key), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    const text = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
