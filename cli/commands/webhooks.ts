import { loadConfig } from '../../shared/config/config.ts';
import { listDeliveryAttempts, listEndpointDeliveries } from '../../shared/db/queries/webhooks.ts';
import { createWebhookEndpoint } from '../../shared/webhooks/endpoints.ts';
import { webhookEventTypes } from '../../shared/webhooks/fanout.ts';
import { CliError, integerFlag, listFlag, requireFlag } from '../cliError.ts';
import { type CommandTable, optionalString, requiredString } from '../commandTable.ts';
import { projectFlag } from '../sharedFlags.ts';

export const webhookCommands: CommandTable = {
  'webhook create': {
    summary: "Registers a webhook endpoint for a project's events; its signing secret is printed once.",
    flags: {
      project: projectFlag,
      url: requiredString(
        'U',
        'http(s) URL to deliver to; private addresses need WEBHOOK_ALLOW_PRIVATE=true.',
      ),
      events: requiredString('a,b', `Comma-separated event types: ${webhookEventTypes.join(', ')}.`),
    },
    run: async (pool, v, config) => {
      const created = await createWebhookEndpoint(pool, {
        projectId: requireFlag(v, 'project'),
        url: requireFlag(v, 'url'),
        events: listFlag(v, 'events') ?? [],
        allowPrivate: (config ?? loadConfig()).webhookAllowPrivate,
      });
      if ('problem' in created) {
        const { code, message } = created.problem;
        throw new CliError(code === 'not_found' ? 'not_found' : 'invalid_arguments', message);
      }
      return { webhook: created.endpoint };
    },
  },
  'webhook deliveries': {
    summary: "Prints an endpoint's delivery log, newest first, with every attempt.",
    flags: {
      webhook: requiredString('H', 'Webhook endpoint id (wh_…).'),
      limit: optionalString('N', 'Deliveries to print, 1 to 100 (default 20).'),
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
              // Set when the attempt ran before its retry schedule said (a catch-up after an outage).
              ...(a.reason === null ? {} : { reason: a.reason }),
            })),
            nextAttemptAt: d.next_attempt_at,
            ...(d.next_attempt_reason === null ? {} : { nextAttemptReason: d.next_attempt_reason }),
          })),
        ),
      };
    },
  },
};
