import type { Attributes, AttributeValue, Link } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-node';

import { scrubSecrets } from '../scrubSecrets.ts';

/**
 * Attributes that hold a URL or a part of one: a query string never leaves (tokens, presigned
 * parameters), a URL keeps its scheme, host and path (then scrubbed like any text), never its user
 * information. Our own spans set none of these; an opt-in instrumentation (pg) or a future one might.
 */
const urlKeys = new Set(['url.full', 'http.url', 'url.original', 'db.connection_string']);
const pathKeys = new Set(['url.path', 'http.target']);
const droppedKeys = new Set(['url.query']);

/**
 * What every credential pattern of scrubSecrets needs somewhere in a text (a URL's `://`, a
 * setting's `=` or `:`, a scheme or a prefix): most span texts (`GET`, `platform.me`, a route) have
 * none of it and skip the patterns, which would otherwise run over every attribute of every span.
 */
const mightHoldCredential = /:\/\/|[=:]|bearer|basic|token|svc_|whsec_|sk-|x-amz-/i;

/** scrubSecrets(text, known), skipped where neither a pattern nor a configured value can match. */
export function scrub(text: string, known: readonly string[]): string {
  if (mightHoldCredential.test(text) || known.some((secret) => text.includes(secret))) {
    return scrubSecrets(text, known);
  }
  return text;
}

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

/** An attribute's value as it may leave the process; undefined for one that never does. */
export function redactValue(
  key: string,
  value: AttributeValue | undefined,
  known: readonly string[],
): AttributeValue | undefined {
  if (value === undefined || droppedKeys.has(key)) return undefined;
  if (typeof value === 'string') {
    const text = urlKeys.has(key) ? redactUrl(value) : pathKeys.has(key) ? withoutQuery(value) : value;
    return scrub(text, known);
  }
  if (Array.isArray(value)) {
    return value.map((item: unknown) =>
      typeof item === 'string' ? scrub(item, known) : item,
    ) as AttributeValue;
  }
  return value;
}

/** `attributes` with every text scrubbed as the logger scrubs a line (see scrubSecrets). */
export function redactAttributes(attributes: Attributes, known: readonly string[]): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    const redacted = redactValue(key, value, known);
    if (redacted !== undefined) out[key] = redacted;
  }
  return out;
}

function redactEvent(event: TimedEvent, known: readonly string[]): TimedEvent {
  return {
    ...event,
    name: scrub(event.name, known),
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
    name: scrub(span.name, known),
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    status:
      span.status.message === undefined
        ? span.status
        : { ...span.status, message: scrub(span.status.message, known) },
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
