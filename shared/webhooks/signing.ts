import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of
 * random bytes; the signature is `v1,` + base64(HMAC-SHA256(secret bytes, `${id}.${timestamp}.${body}`)).
 */
const secretPrefix = 'whsec_';

/** A new endpoint secret: 32 random bytes (the scheme asks for 24 to 64). */
export function newWebhookSecret(): string {
  return `${secretPrefix}${randomBytes(32).toString('base64')}`;
}

function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(secretPrefix)) throw new Error('webhook secret must start with whsec_');
  return Buffer.from(secret.slice(secretPrefix.length), 'base64');
}

/** The `webhook-signature` value for one delivery attempt. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const digest = createHmac('sha256', secretBytes(secret))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${digest}`;
}

/**
 * The three headers a delivery carries besides its content type. `secrets` is the endpoint's
 * current secret, then during a rotation's overlap the one it replaced: one space-separated `v1,`
 * signature each, so a receiver holding either accepts the delivery.
 */
export function webhookHeaders(
  secrets: readonly [string, ...string[]],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signWebhook(s, id, timestampSeconds, body)).join(' '),
  };
}

/**
 * What a receiver does: checks one of the space-separated `v1,` signatures against the body, and that
 * the timestamp is within `toleranceSeconds` of now (replay protection). Returns false rather than throwing.
 */
export function verifyWebhook(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): boolean {
  const timestamp = Number(headers.timestamp);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (!Number.isInteger(timestamp) || Math.abs(now - timestamp) > (options.toleranceSeconds ?? 300)) {
    return false;
  }
  const expected = Buffer.from(signWebhook(secret, headers.id, timestamp, body).slice(3), 'base64');
  return headers.signature.split(' ').some((candidate) => {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
