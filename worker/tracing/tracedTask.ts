import {
  type Attributes,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import { z } from 'zod';

import { coerceError } from '../../shared/errors/appError.ts';
import { scrubSecrets } from '../../shared/observability/logger.ts';
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
    const carrier = payload.success ? payload.data.trace : undefined;
    const parent = carrier ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
    const attributes: Attributes = {
      'svc.job.task': identifier,
      'svc.job.attempt': helpers.job.attempts,
      'svc.queue_job.id': helpers.job.id,
      'messaging.operation.type': 'process',
    };
    if (payload.success && payload.data.jobId !== undefined) attributes['svc.job.id'] = payload.data.jobId;
    const options = { kind: SpanKind.CONSUMER, attributes };
    return tracer.startActiveSpan(`job ${identifier}`, options, parent, async (span) => {
      try {
        return await task(rawPayload, helpers);
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
  };
}
