import type { Express } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { redact, type RequestLogWriter } from '../requestLog.ts';

/** Records every API call (status, latency, cost, redacted bodies) once its response has been sent. */
export function installRequestLog(app: Express, writer: RequestLogWriter): void {
  app.use((req, res, next) => {
    if (!req.path.startsWith(apiBasePath)) return next();
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      res.locals.responseBody = body;
      return json(body);
    };
    res.on('finish', () => {
      const principal = req.principal;
      writer.push({
        request_id: req.requestId,
        workspace_id: principal?.workspaceId ?? null,
        project_id: res.locals.projectId ?? null,
        key_id: principal?.credentialId ?? null,
        method: req.method,
        // originalUrl: inside mounted routers req.path is relative to the mount point.
        path: req.originalUrl.split('?')[0] ?? req.originalUrl,
        status: res.statusCode,
        latency_ms: Number((process.hrtime.bigint() - req.startedAt) / 1_000_000n),
        cost_minor: res.locals.costMinor ?? 0,
        ip: req.ip ?? null,
        request_body: req.body === undefined ? null : redact(req.body),
        response_body: res.locals.responseBody === undefined ? null : redact(res.locals.responseBody),
        created_at: new Date().toISOString(),
      });
    });
    next();
  });
}
