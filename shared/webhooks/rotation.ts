import { expirePreviousSecret, rotateEndpointSecret } from '../db/queries/webhooks.ts';
import type { Db } from '../db/sql.ts';
import type { WebhookProblem } from './endpoints.ts';
import { newWebhookSecret } from './signing.ts';

/**
 * How long a replaced secret keeps signing deliveries after a rotation: a day by default (time to
 * deploy the new secret to every receiver), at most a week, 0 to drop it at once.
 */
export const rotationOverlap = { defaultSeconds: 86_400, maxSeconds: 7 * 86_400 } as const;

export type RotatedSecret = {
  id: string;
  url: string;
  /** Shown once: deliveries are signed with it from now on. */
  secret: string;
  /** Until when deliveries are also signed with the replaced secret; null when they are not. */
  previousSecretUntil: string | null;
};

/**
 * A new signing secret for an endpoint (the console's "Rotate secret" and the CLI's `webhook
 * rotate`). For `overlapSeconds` every delivery is signed with both the new and the replaced
 * secret, so receivers switch without refusing any; rotating again during an overlap replaces the
 * older of the two. The endpoint must be in `workspaceId` when one is given (the console's).
 */
export async function rotateWebhookSecret(
  db: Db,
  input: { endpointId: string; workspaceId?: string; overlapSeconds?: number },
): Promise<{ rotated: RotatedSecret } | { problem: WebhookProblem }> {
  const overlapSeconds = input.overlapSeconds ?? rotationOverlap.defaultSeconds;
  if (
    !Number.isInteger(overlapSeconds) ||
    overlapSeconds < 0 ||
    overlapSeconds > rotationOverlap.maxSeconds
  ) {
    return {
      problem: {
        code: 'invalid_arguments',
        message: `the overlap is a whole number of seconds from 0 to ${rotationOverlap.maxSeconds} (7 days)`,
      },
    };
  }
  const secret = newWebhookSecret();
  const row = await rotateEndpointSecret(db, {
    endpointId: input.endpointId,
    workspaceId: input.workspaceId ?? null,
    secret,
    overlapSeconds,
  });
  if (!row) return { problem: { code: 'not_found', message: `no webhook endpoint ${input.endpointId}` } };
  return {
    rotated: { id: row.id, url: row.url, secret, previousSecretUntil: row.previous_secret_expires_at },
  };
}

/**
 * Ends a rotation's overlap now ("expire the old secret now"): deliveries from here on carry the
 * current secret's signature alone. Null when the workspace has no such endpoint.
 */
export function expireOldWebhookSecret(db: Db, endpointId: string, workspaceId: string) {
  return expirePreviousSecret(db, endpointId, workspaceId);
}
