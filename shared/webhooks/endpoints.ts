import dns from 'node:dns/promises';
import net from 'node:net';

import { findProject } from '../db/queries/projects.ts';
import { insertWebhookEndpoint, updateWebhookEndpoint } from '../db/queries/webhooks.ts';
import type { Db } from '../db/sql.ts';
import { newId } from '../primitives/ids.ts';
import { isWebhookEventType, webhookEventTypes } from './fanout.ts';
import { newWebhookSecret } from './signing.ts';
import { isPublicAddress } from './ssrf.ts';

export type WebhookProblem = { code: 'not_found' | 'invalid_arguments' | 'conflict'; message: string };

/**
 * A URL a webhook may be registered at: http(s), no credentials, and not a literal private address
 * unless WEBHOOK_ALLOW_PRIVATE is set. Host names are checked again at every delivery, after DNS.
 */
export function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  forMember = false,
): { url: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'the URL must be an absolute http(s) URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { problem: 'the URL must use http or https' };
  }
  if (url.username !== '' || url.password !== '') return { problem: 'the URL may not carry credentials' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && net.isIP(host) !== 0 && !isPublicAddress(host)) {
    return { problem: privateTarget(host, forMember) };
  }
  // RFC 6761: every name under localhost is the machine itself, whatever a resolver says.
  if (!allowPrivate && /(^|\.)localhost\.?$/i.test(host)) return { problem: privateTarget(host, forMember) };
  return { url: url.toString() };
}

/**
 * Said to whoever registers the endpoint: a workspace member in the console hears what is wrong
 * with the URL; an operator at the CLI also hears the setting that would allow it.
 */
function privateTarget(host: string, forMember: boolean): string {
  // The host as typed, never what a name resolved to: that would map the internal network.
  const what = `the URL points at ${host}, a private or loopback address`;
  return forMember
    ? `${what}: webhooks are sent over the public internet, so use a public address`
    : `${what} (set WEBHOOK_ALLOW_PRIVATE=true to allow)`;
}

/** How long registration waits for DNS before leaving the check to delivery time. */
const lookupTimeoutMs = 2000;

/**
 * A host name that resolves to a private address is refused at registration as a literal one is
 * (every delivery checks again, after its own lookup). A name that does not resolve now is not
 * refused here: it may be published later, and deliveries check it then.
 */
async function checkResolvedHost(url: string, forMember: boolean): Promise<string | undefined> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) !== 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), lookupTimeoutMs);
  });
  const found = await Promise.race([dns.lookup(host, { all: true }).catch(() => null), timeout]);
  clearTimeout(timer);
  const blocked = found?.some((a) => !isPublicAddress(a.address));
  return blocked ? privateTarget(host, forMember) : undefined;
}

/**
 * Registers an endpoint for a project's events (the CLI's `webhook create` and the console). The
 * project must be in `workspaceId` when one is given (the console's session workspace).
 */
export async function createWebhookEndpoint(
  db: Db,
  input: {
    projectId: string;
    url: string;
    events: string[];
    allowPrivate: boolean;
    workspaceId?: string;
    /** The console: problems are worded for a workspace member, not an operator. */
    forMember?: boolean;
  },
): Promise<{ endpoint: { id: string; secret: string } } | { problem: WebhookProblem }> {
  const forMember = input.forMember ?? false;
  const checked = checkWebhookUrl(input.url, input.allowPrivate, forMember);
  if ('problem' in checked) return { problem: { code: 'invalid_arguments', message: checked.problem } };
  const resolved = input.allowPrivate ? undefined : await checkResolvedHost(checked.url, forMember);
  if (resolved) return { problem: { code: 'invalid_arguments', message: resolved } };
  const events = [...new Set(input.events)];
  if (events.length === 0) {
    return {
      problem: {
        code: 'invalid_arguments',
        message: `choose at least one of ${webhookEventTypes.join(', ')}`,
      },
    };
  }
  const unknown = events.filter((e) => !isWebhookEventType(e));
  if (unknown.length > 0) {
    return {
      problem: {
        code: 'invalid_arguments',
        message: `unknown events: ${unknown.join(', ')}; known: ${webhookEventTypes.join(', ')}`,
      },
    };
  }
  const project = await findProject(db, input.projectId);
  if (!project || (input.workspaceId !== undefined && project.workspace_id !== input.workspaceId)) {
    return { problem: { code: 'not_found', message: `no project ${input.projectId}` } };
  }
  const endpoint = await insertWebhookEndpoint(db, {
    id: newId('wh'),
    workspaceId: project.workspace_id,
    projectId: project.id,
    url: checked.url,
    events,
    secret: newWebhookSecret(),
  });
  return { endpoint: { id: endpoint.id, secret: endpoint.secret } };
}

/** Stops (or restarts) deliveries to an endpoint; pending attempts to a disabled one are not sent. */
export function setWebhookEnabled(db: Db, endpointId: string, workspaceId: string, enabled: boolean) {
  return updateWebhookEndpoint(db, endpointId, workspaceId, { enabled });
}
