import type { Socket } from 'node:net';

import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { Express, Request, Response } from 'express';

import { apiBasePath, type TraceContextTrust } from '../../shared/config/config.ts';
import type { TracesSampler } from '../../shared/config/tracesSampler.ts';
import { sampledRoot, UnsampledSpan } from '../../shared/observability/tracing/edgeDecision.ts';
import { type RootDecision, rootDecision } from '../../shared/observability/tracing/rootDecision.ts';
import { ServerSpan, serverSpansExported } from '../../shared/observability/tracing/serverSpan.ts';
import { makeTrustedPeer } from '../../shared/observability/tracing/trustedPeer.ts';

/** Scrapes and probes arrive every few seconds and would each start a trace of their own. */
const untracedPaths = new Set(['/metrics', '/healthz']);

/** Logged for a call whose client left before any answer was sent, as the request log has it. */
const clientClosedRequest = 499;

/** Each API operation's route template, made once: a span keeps it for seconds. */
const apiRoutes = new Map<string, string>();

/**
 * The route template the request matched, never its path: an API call's OpenAPI path, else the
 * Express route's pattern (`/hirefire/:token/info`), else nothing (an unmatched path is the caller's
 * text, and may be anything).
 */
function routeOf(req: Request): string | undefined {
  if (req.operation) {
    const { path } = req.operation;
    let route = apiRoutes.get(path);
    if (route === undefined) apiRoutes.set(path, (route = `${apiBasePath}${path}`));
    return route;
  }
  const pattern: unknown = req.route?.path;
  return typeof pattern === 'string' ? `${req.baseUrl}${pattern}` : undefined;
}

/**
 * The request's scheme as Express tells it (req.protocol), kept per connection: Express judges the
 * proxy's X-Forwarded-Proto by parsing the peer's address against `trust proxy` on every read,
 * ~14 µs a traced request, and a kept-alive connection's peer and proxy header stay the same.
 */
const schemes = new WeakMap<Socket, { forwarded: string | string[] | undefined; scheme: string }>();
function schemeOf(req: Request): string {
  // Node names headers in lower case already: req.get would only lower it again.
  const forwarded = req.headers['x-forwarded-proto'];
  const known = schemes.get(req.socket);
  if (known !== undefined && known.forwarded === forwarded) return known.scheme;
  const scheme = req.protocol;
  schemes.set(req.socket, { forwarded, scheme });
  return scheme;
}

/**
 * Where a request's span starts: a caller's `traceparent` is continued only from a trusted peer
 * (TRACE_CONTEXT_TRUST, judged by the connection's own address); from anyone else it is a link on
 * a root span, so the sampler decides here, at the edge, and a caller's sampled flag forces nothing.
 * The link carries ids only, never the caller's tracestate.
 */
function startingPoint(req: Request, isTrusted: (address: string | undefined) => boolean) {
  if (req.headers.traceparent === undefined) return { parent: ROOT_CONTEXT, links: undefined };
  const extracted = propagation.extract(ROOT_CONTEXT, req.headers);
  const remote = trace.getSpanContext(extracted);
  if (remote === undefined) return { parent: ROOT_CONTEXT, links: undefined };
  if (isTrusted(req.socket.remoteAddress)) return { parent: extracted, links: undefined };
  const { traceId, spanId, traceFlags } = remote;
  const links: Link[] = [{ context: { traceId, spanId, traceFlags, isRemote: true } }];
  return { parent: ROOT_CONTEXT, links };
}

/**
 * Where an untrusted (or absent) context leaves the api to start the trace: with a parent-based
 * sampler (rootDecision: per call, or per window) it decides here, before any span exists. An
 * unsampled call runs in the context of an UnsampledSpan (the decision still travels to its jobs);
 * a sampled one starts its root in sampledRoot, which the sampler records as decided. Other
 * samplers decide in the SDK.
 */
function decideAtEdge(decide: RootDecision | undefined, parent: Context): Context | 'unsampled' {
  if (parent !== ROOT_CONTEXT || decide === undefined) return parent;
  return decide() ? sampledRoot : 'unsampled';
}

/**
 * A request's span once its answer is out (or its client gone): named by the operation the pipeline
 * resolved, with the route's shape, the status and the request id, read only now and only for a
 * recorded span. A ServerSpan takes them in one step.
 */
function endRequestSpan(span: Span, req: Request, res: Response): void {
  const route = routeOf(req);
  const status = res.headersSent ? res.statusCode : clientClosedRequest;
  const name = req.operation?.id ?? (route === undefined ? req.method : `${req.method} ${route}`);
  const attributes: Attributes =
    route !== undefined && req.operation !== undefined && req.requestId !== undefined
      ? {
          'http.request.method': req.method,
          'url.scheme': schemeOf(req),
          'http.response.status_code': status,
          'http.route': route,
          'svc.operation': req.operation.id,
          'svc.request_id': req.requestId,
        }
      : {
          'http.request.method': req.method,
          'url.scheme': schemeOf(req),
          'http.response.status_code': status,
          ...(route !== undefined && { 'http.route': route }),
          ...(req.operation && { 'svc.operation': req.operation.id }),
          ...(req.requestId !== undefined && { 'svc.request_id': req.requestId }),
        };
  if (span instanceof ServerSpan) return span.finish(name, attributes, status >= 500);
  span.updateName(name);
  span.setAttributes(attributes);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * One server span per request (installed only with tracing on), named once the answer is out by
 * the operation id the pipeline resolved (`createText`), or by method and route template for the
 * pages, OAuth and MCP endpoints. Attributes are the route's shape, never the path or query (which
 * can hold a token); every handler, job added and log line inside runs in the span's context.
 */
export function installServerSpan(app: Express, trust: TraceContextTrust, sampling: TracesSampler): void {
  const tracer = trace.getTracer('svc-api');
  const isTrusted = makeTrustedPeer(trust);
  const decide = rootDecision(sampling);
  app.use((req, res, next) => {
    if (untracedPaths.has(req.path)) return next();
    const { parent, links } = startingPoint(req, isTrusted);
    const start = decideAtEdge(decide, parent);
    if (start === 'unsampled') return context.with(trace.setSpan(ROOT_CONTEXT, new UnsampledSpan()), next);
    // A root sampled here needs nothing of the SDK's span but its export (see ServerSpan).
    const span =
      start === sampledRoot && serverSpansExported()
        ? new ServerSpan(req.method, {}, links)
        : tracer.startSpan(
            req.method,
            { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method }, links },
            start,
          );
    // An unsampled request's span records nothing: it only carries the decision on to its jobs.
    // 'close' comes once for a response; `on` spares once()'s wrapper a call.
    if (span.isRecording()) res.on('close', () => endRequestSpan(span, req, res));
    context.with(trace.setSpan(parent, span), next);
  });
}
