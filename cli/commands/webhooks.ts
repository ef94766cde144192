import { loadConfig } from '../../shared/config/config.ts';
import { listDeliveryAttempts, listEndpointDeliveries } from '../../shared/db/queries/webhooks.ts';
import { createWebhookEndpoint } from '../../shared/webhooks/endpoints.ts';
import { webhookEventTypes } from '../../shared/webhooks/fanout.ts';
import { parseSince, resendDeliveries, resendSinceLimit } from '../../shared/webhooks/resend.ts';
import { rotateWebhookSecret, rotationOverlap } from '../../shared/webhooks/rotation.ts';
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
  'webhook rotate': {
    summary:
      'Gives an endpoint a new signing secret (printed once); deliveries are signed with the old one too for the overlap.',
    flags: {
      webhook: requiredString('H', 'Webhook endpoint id (wh_…).'),
      overlap: optionalString(
        'SECONDS',
        `How long deliveries are also signed with the old secret, 0 to ${rotationOverlap.maxSeconds} seconds (default ${rotationOverlap.defaultSeconds}).`,
      ),
    },
    run: async (pool, v) => {
      const result = await rotateWebhookSecret(pool, {
        endpointId: requireFlag(v, 'webhook'),
        overlapSeconds: integerFlag(v, 'overlap') ?? rotationOverlap.defaultSeconds,
      });
      if ('problem' in result) throw new CliError(result.problem.code, result.problem.message);
      const { id, secret, previousSecretUntil } = result.rotated;
      return { webhook: { id, secret, previousSecretUntil } };
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
  'webhook resend': {
    summary:
      'Sends a delivery again (a new attempt of the same event), or every failed delivery of the endpoint created since a time.',
    flags: {
      webhook: requiredString('H', 'Webhook endpoint id (wh_…).'),
      delivery: optionalString('D', 'The delivery to resend (whd_…); or --since.'),
      since: optionalString(
        'ISO',
        `Resend the endpoint's failed deliveries created at or after this time (UTC unless it says), oldest first, at most ${resendSinceLimit}; or --delivery.`,
      ),
    },
    run: async (pool, v) => {
      const result = await resendDeliveries(pool, {
        endpointId: requireFlag(v, 'webhook'),
        actor: 'the operator',
        target: resendTarget(v),
      });
      if ('problem' in result) throw new CliError(result.problem.code, result.problem.message);
      const resent = result.resent.map((r) => ({ id: r.id, attempt: r.attempt, was: r.was }));
      // `next`: where the failed deliveries beyond this call's limit begin (null: none left).
      return v.delivery !== undefined ? { resent } : { resent, next: result.next };
    },
  },
};

/** Exactly one of --delivery and --since. */
function resendTarget(v: Record<string, string | boolean | undefined>) {
  const delivery = v.delivery;
  const since = v.since;
  if ((delivery === undefined) === (since === undefined)) {
    throw new CliError('invalid_arguments', 'give exactly one of --delivery D and --since ISO');
  }
  if (delivery !== undefined) return { deliveryId: requireFlag(v, 'delivery') };
  const at = typeof since === 'string' ? parseSince(since) : null;
  if (!at) {
    throw new CliError(
      'invalid_arguments',
      '--since must be an ISO 8601 date or date and time, e.g. 2026-11-29T08:30:00Z',
    );
  }
  return { since: at };
}
