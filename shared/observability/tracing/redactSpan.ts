import type { Attributes, AttributeValue, Link } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-node';

import { scrubSecrets } from '../logger.ts';

/**
 * Attributes that hold a URL or a part of one: a query string never leaves (tokens, presigned
 * parameters), a URL keeps its scheme, host and path (then scrubbed like any text), never its user
 * information. Our own spans set none of these; an opt-in instrumentation (pg) or a future one might.
 */
const urlKeys = new Set(['url.full', 'http.url', 'url.original', 'db.connection_string']);
const pathKeys = new Set(['url.path', 'http.target']);
const droppedKeys = new Set(['url.query']);

function withoutQuery(text: string): string {
  const end = text.search(/[?#]/);
  return end === -1 ? text : text.slice(0, end);
}

function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return withoutQuery(text);
  }
}

function redactValue(key: string, value: AttributeValue, known: readonly string[]): AttributeValue {
  if (typeof value === 'string') {
    const text = urlKeys.has(key) ? redactUrl(value) : pathKeys.has(key) ? withoutQuery(value) : value;
    return scrubSecrets(text, known);
  }
  if (Array.isArray(value)) {
    return value.map((item: unknown) =>
      typeof item === 'string' ? scrubSecrets(item, known) : item,
    ) as AttributeValue;
  }
  return value;
}

/** `attributes` with every text scrubbed as the logger scrubs a line (see scrubSecrets). */
export function redactAttributes(attributes: Attributes, known: readonly string[]): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || droppedKeys.has(key)) continue;
    out[key] = redactValue(key, value, known);
  }
  return out;
}

function redactEvent(event: TimedEvent, known: readonly string[]): TimedEvent {
  return {
    ...event,
    name: scrubSecrets(event.name, known),
    ...(event.attributes && { attributes: redactAttributes(event.attributes, known) }),
  };
}

function redactLink(link: Link, known: readonly string[]): Link {
  return link.attributes ? { ...link, attributes: redactAttributes(link.attributes, known) } : link;
}

/**
 * A copy of `span` as it may leave the process: its name, attributes, events, links' attributes
 * and status message through the logger's redaction (the credential patterns and the configured
 * secret values `known`), URLs without queries. Spans are exported by the batch processor off the
 * request path, so the copy costs nothing a caller waits for.
 */
export function redactSpan(span: ReadableSpan, known: readonly string[]): ReadableSpan {
  return {
    name: scrubSecrets(span.name, known),
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    status:
      span.status.message === undefined
        ? span.status
        : { ...span.status, message: scrubSecrets(span.status.message, known) },
    attributes: redactAttributes(span.attributes, known),
    links: span.links.map((link) => redactLink(link, known)),
    events: span.events.map((event) => redactEvent(event, known)),
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}
