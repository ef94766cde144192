import net from 'node:net';

import { loadConfig } from '../../shared/config.ts';
import { findProject } from '../../shared/db/queries/projects.ts';
import {
  insertWebhookEndpoint,
  listDeliveryAttempts,
  listEndpointDeliveries,
} from '../../shared/db/queries/webhooks.ts';
import { newId } from '../../shared/ids.ts';
import { isWebhookEventType, webhookEventTypes } from '../../shared/webhooks/fanout.ts';
import { newWebhookSecret } from '../../shared/webhooks/signing.ts';
import { isPublicAddress } from '../../shared/webhooks/ssrf.ts';
import { CliError, integerFlag, listFlag, requireFlag } from '../cliError.ts';
import type { CommandTable } from '../commandTable.ts';

/**
 * A URL a webhook may be registered at: http(s), no credentials, and not a literal private address
 * unless WEBHOOK_ALLOW_PRIVATE is set. Host names are checked again at every delivery, after DNS.
 */
function checkTargetUrl(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError('invalid_arguments', '--url must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError('invalid_arguments', '--url must use http or https');
  }
  if (url.username !== '' || url.password !== '') {
    throw new CliError('invalid_arguments', '--url may not carry credentials');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && net.isIP(host) !== 0 && !isPublicAddress(host)) {
    throw new CliError(
      'invalid_arguments',
      `--url points at ${host}, a private or loopback address (set WEBHOOK_ALLOW_PRIVATE=true to allow)`,
    );
  }
  return url.toString();
}

export const webhookCommands: CommandTable = {
  'webhook create': {
    summary: "Registers a webhook endpoint for a project's events; its signing secret is printed once.",
    flags: {
      project: { type: 'string', value: 'P', required: true, description: 'Project id (prj_…).' },
      url: {
        type: 'string',
        value: 'U',
        required: true,
        description: 'http(s) URL to deliver to; private addresses need WEBHOOK_ALLOW_PRIVATE=true.',
      },
      events: {
        type: 'string',
        value: 'a,b',
        required: true,
        description: `Comma-separated event types: ${webhookEventTypes.join(', ')}.`,
      },
    },
    run: async (pool, v) => {
      const projectId = requireFlag(v, 'project');
      const url = checkTargetUrl(requireFlag(v, 'url'), loadConfig().webhookAllowPrivate);
      const events = [...new Set(listFlag(v, 'events') ?? [])];
      if (events.length === 0) {
        throw new CliError(
          'invalid_arguments',
          `--events needs at least one of ${webhookEventTypes.join(', ')}`,
        );
      }
      const unknown = events.filter((e) => !isWebhookEventType(e));
      if (unknown.length > 0) {
        throw new CliError(
          'invalid_arguments',
          `unknown events: ${unknown.join(', ')}; known: ${webhookEventTypes.join(', ')}`,
        );
      }
      const project = await findProject(pool, projectId);
      if (!project) throw new CliError('not_found', `no project ${projectId}`);
      const endpoint = await insertWebhookEndpoint(pool, {
        id: newId('wh'),
        workspaceId: project.workspace_id,
        projectId: project.id,
        url,
        events,
        secret: newWebhookSecret(),
      });
      return { webhook: { id: endpoint.id, secret: endpoint.secret } };
    },
  },
  'webhook deliveries': {
    summary: "Prints an endpoint's delivery log, newest first, with every attempt.",
    flags: {
      webhook: { type: 'string', value: 'H', required: true, description: 'Webhook endpoint id (wh_…).' },
      limit: { type: 'string', value: 'N', description: 'Deliveries to print, 1 to 100 (default 20).' },
    },
    run: async (pool, v) => {
      const limit = Math.min(integerFlag(v, 'limit', 1) ?? 20, 100);
      const deliveries = await listEndpointDeliveries(pool, requireFlag(v, 'webhook'), limit);
      return {
        deliveries: await Promise.all(
          deliveries.map(async (d) => ({
            id: d.id,
            eventId: d.event_id,
            status: d.status,
            attempts: (await listDeliveryAttempts(pool, d.id)).map((a) => ({
              attempt: a.attempt,
              statusCode: a.status_code,
              error: a.error,
              durationMs: a.duration_ms,
              at: a.created_at,
            })),
            nextAttemptAt: d.next_attempt_at,
          })),
        ),
      };
    },
  },
};
