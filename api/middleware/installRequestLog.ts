import type { Express, Request, Response } from 'express';

import type { RequestLogEntry } from '../../shared/db/queries/requestLogs.ts';
import { isApiPath } from '../apiPath.ts';
import { redact } from '../redact.ts';
import type { RequestLogWriter } from '../requestLog.ts';

/**
 * The log row of an answered API call (status, latency, cost). Bodies are kept, redacted and
 * bounded (redact.ts), only for calls made with a credential: an anonymous caller (a 401, an unknown
 * path, /status, /openapi.json) must not be able to write what it likes into a log kept 30 days.
 * MCP tool calls write theirs with it too (api/mcp/runOperation.ts); a /mcp request whose every
 * message was a tool call is recorded by those entries alone, one per call, as its REST twin would be.
 */
export function requestLogEntry(req: Request, res: Response): RequestLogEntry {
  const principal = req.principal;
  return {
    request_id: req.requestId,
    workspace_id: principal?.workspaceId ?? null,
    project_id: res.locals.projectId ?? null,
    key_id: principal?.credentialId ?? null,
    oauth_app_id: principal?.oauthAppId ?? null,
    operation: req.operation?.id ?? null,
    method: req.method,
    // originalUrl: inside mounted routers req.path is relative to the mount point.
    path: req.originalUrl.split('?')[0] ?? req.originalUrl,
    status: res.statusCode,
    latency_ms: Number((process.hrtime.bigint() - req.startedAt) / 1_000_000n),
    cost_minor: res.locals.costMinor ?? 0,
    ip: req.ip ?? null,
    request_body: principal && req.body !== undefined ? redact(req.body) : null,
    response_body:
      principal && res.locals.responseBody !== undefined ? redact(res.locals.responseBody) : null,
    created_at: new Date().toISOString(),
  };
}

/** Records every API call once its response has been sent (requestLogEntry). */
export function installRequestLog(app: Express, writer: RequestLogWriter): void {
  app.use((req, res, next) => {
    if (!isApiPath(req.path)) return next();
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      res.locals.responseBody = body;
      return json(body);
    };
    res.on('finish', () => {
      if (!res.locals.loggedAsToolCalls) writer.push(requestLogEntry(req, res));
    });
    next();
  });
}
