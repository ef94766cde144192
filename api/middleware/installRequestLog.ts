import type { Express } from 'express';

import { isApiPath } from '../http/apiPath.ts';
import { requestLogEntry } from '../pipeline/requestLogEntry.ts';
import type { RequestLogWriter } from '../requestLog/requestLogWriter.ts';

/**
 * Records every API call once its response has been sent (requestLogEntry, which MCP tool calls
 * write theirs with too): a /mcp request whose every message was a tool call is recorded by those
 * entries alone, one per call, as its REST twin would be.
 */
export function installRequestLog(app: Express, writer: RequestLogWriter): void {
  app.use((req, res, next) => {
    if (!isApiPath(req.path)) return next();
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      res.locals.responseBody = body;
      return json(body);
    };
    res.on('finish', () => {
      if (res.locals.loggedAsToolCalls) return;
      const call = {
        requestId: req.requestId,
        startedAt: req.startedAt,
        principal: req.principal,
        operation: req.operation,
        method: req.method,
        // originalUrl: inside mounted routers req.path is relative to the mount point.
        fullPath: req.originalUrl.split('?')[0] ?? req.originalUrl,
        ip: req.ip,
        body: req.body,
      };
      const { locals } = res;
      const answer = {
        status: res.statusCode,
        body: locals.responseBody,
        projectId: locals.projectId,
        costMinor: locals.costMinor,
      };
      writer.push(requestLogEntry(call, answer));
    });
    next();
  });
}
