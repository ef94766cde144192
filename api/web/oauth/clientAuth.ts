import { timingSafeEqual } from 'node:crypto';

import type { Request } from 'express';

import { findOauthAppByClientId } from '../../../shared/db/queries/oauthApps.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { isMetadataClientId, maxClientIdUrlLength } from '../../../shared/oauth/clientMetadataDocument.ts';
import type { Client } from '../../../shared/oauth/grants.ts';
import { OauthError } from '../../../shared/oauth/oauthError.ts';
import { sha256 } from '../../../shared/primitives/ids.ts';

/** An invalid_client that names the scheme the client tried (RFC 6749 §5.2: 401 + WWW-Authenticate for Basic). */
export class InvalidClient extends OauthError {
  readonly usedBasic: boolean;
  constructor(description: string, usedBasic: boolean) {
    super('invalid_client', description);
    this.usedBasic = usedBasic;
  }
}

function fromBasic(header: string): { id: string; secret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  // RFC 6749 §2.3.1: both halves are form-urlencoded before base64.
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replaceAll('+', ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replaceAll('+', ' ')),
    };
  } catch {
    return null;
  }
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/**
 * Client authentication of the token and revoke endpoints: HTTP Basic or client_id + client_secret in
 * the body (never both), or a public client by client_id alone. A server app must prove its secret
 * (svc_ocs_…, compared by hash); a public app has none to send.
 * @throws OauthError invalid_request for two methods at once, InvalidClient for anything else.
 */
export async function authenticateClient(db: Db, req: Request): Promise<Client> {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const header = req.get('authorization');
  const usedBasic = header !== undefined;
  let id: string | undefined;
  let secret: string | undefined;
  if (header !== undefined) {
    if (body.client_secret !== undefined) {
      throw new OauthError('invalid_request', 'Use one client authentication method, not two.');
    }
    const basic = fromBasic(header);
    if (!basic) throw new InvalidClient('The Authorization header is not valid HTTP Basic.', true);
    if (str(body.client_id) !== undefined && body.client_id !== basic.id) {
      throw new OauthError('invalid_request', 'client_id in the body differs from the Authorization header.');
    }
    ({ id, secret } = basic);
  } else {
    id = str(body.client_id);
    secret = str(body.client_secret);
  }
  if (!id) throw new InvalidClient('Client authentication is required.', usedBasic);
  // A metadata-document client (client_id = URL) has its row from the authorization that preceded.
  const known =
    /^svc_oc_[0-9A-Za-z]{1,64}$/.test(id) || (isMetadataClientId(id) && id.length <= maxClientIdUrlLength);
  const app = known ? await findOauthAppByClientId(db, id) : null;
  if (!app) throw new InvalidClient('Unknown client.', usedBasic);
  if (app.client_secret_hash === null) {
    if (secret) throw new InvalidClient('This public client has no secret to send.', usedBasic);
  } else if (!secret || !timingSafeEqual(sha256(secret), app.client_secret_hash)) {
    throw new InvalidClient('Client authentication failed.', usedBasic);
  }
  return { appId: app.id, clientId: app.client_id };
}
