import { newOpaqueToken } from '../../shared/oauth/tokens.ts';
import { newKeySecret, randomBase62 } from '../../shared/primitives/ids.ts';
import { newWebhookSecret } from '../../shared/webhooks/signing.ts';

/** A credential as someone might paste it into a prompt or an upstream might echo it into an error. */
export type SecretSample = { name: string; text: string; secret: string };

const bare = (name: string, secret: string): SecretSample => ({ name, text: secret, secret });

/**
 * One sample per credential format the request log and the logger must mask, minted fresh per call:
 * each alone in its text, so the sample is caught by its own pattern or not at all (a `Bearer` in
 * front of an OAuth token would hide a missing token pattern behind the bearer one).
 */
export function secretSamples(): SecretSample[] {
  const thirdParty = `ghp_${randomBase62(36)}`;
  // Short enough that the whole line still fits in a task title (80 characters).
  const jwt = `eyJhbGciOiJIUzI1NiJ9.${randomBase62(16)}.${randomBase62(16)}`;
  return [
    bare('a test key', newKeySecret(false)),
    bare('a live key', newKeySecret(true)),
    bare('an OAuth client secret', `svc_ocs_${randomBase62(40)}`),
    bare('an OAuth access token', newOpaqueToken('access')),
    bare('an OAuth refresh token', newOpaqueToken('refresh')),
    bare('an OAuth authorization code', newOpaqueToken('code')),
    bare('a webhook signing secret', newWebhookSecret()),
    { name: "another service's bearer token", text: `Bearer ${thirdParty}`, secret: thirdParty },
    { name: 'a bearer JWT in an Authorization header', text: `Authorization: Bearer ${jwt}`, secret: jwt },
  ];
}
