import {
  type Attributes,
  type Link,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import { z } from 'zod';

import { coerceError } from '../../shared/errors/appError.ts';
import { scrubSecrets } from '../../shared/observability/scrubSecrets.ts';
import { traceCarrier } from '../../shared/observability/traceContext.ts';

const tracer = trace.getTracer('svc-worker');

// Only what tracing reads of any task's payload; the task parses the rest itself.
const tracedPayload = z.object({ jobId: z.string().optional(), trace: traceCarrier.optional() });

/**
 * Runs `task` inside a span `job <identifier>` that continues the trace stored with the job (see
 * traceCarrier): a job added in a traced request or job is its child; one added without a trace
 * (the crontab, the boot probe) starts a trace of its own. Provider calls, queries and webhook
 * requests made by the task are children of this span.
 */
export function tracedTask(identifier: string, task: Task): Task {
  return (rawPayload, helpers) => {
    const payload = tracedPayload.safeParse(rawPayload);
    const attributes: Attributes = {
      'svc.job.task': identifier,
      'svc.job.attempt': helpers.job.attempts,
      'svc.queue_job.id': helpers.job.id,
    };
    if (payload.success && payload.data.jobId !== undefined) attributes['svc.job.id'] = payload.data.jobId;
    const carrier = payload.success ? payload.data.trace : undefined;
    return inJobSpan(identifier, carrier, { attributes }, async () => task(rawPayload, helpers));
  };
}

/**
 * Runs `work` as the processing of a job of `identifier` whose stored trace context is `carrier`:
 * what tracedTask does for a job's own run, also used when one job does another's work (a webhook
 * delivery made by the job draining its endpoint, linked to that job's span).
 */
export function inJobSpan<T>(
  identifier: string,
  carrier: unknown,
  options: { attributes: Attributes; links?: Link[] },
  work: () => Promise<T>,
): Promise<T> {
  const stored = traceCarrier.safeParse(carrier);
  const parent = stored.success ? propagation.extract(ROOT_CONTEXT, stored.data) : ROOT_CONTEXT;
  const spanOptions = {
    kind: SpanKind.CONSUMER,
    attributes: { ...options.attributes, 'messaging.operation.type': 'process' },
    links: options.links,
  };
  return tracer.startActiveSpan(`job ${identifier}`, spanOptions, parent, async (span) => {
    try {
      return await work();
    } catch (thrown) {
      // Spans leave the process unscrubbed by the logger: the same patterns apply here.
      const error = coerceError(thrown);
      const message = scrubSecrets(error.message);
      span.recordException({ name: error.name, message });
      span.setStatus({ code: SpanStatusCode.ERROR, message });
      throw thrown;
    } finally {
      span.end();
    }
  });
}
