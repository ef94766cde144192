import type { Express } from 'express';

import { isApiPath } from '../http/apiPath.ts';
import { requestLogEntry } from '../pipeline/requestLogEntry.ts';
import type { RequestLogWriter } from '../requestLog/requestLogWriter.ts';

/** Logged for a call whose client left before any answer was sent (nginx's "client closed request"). */
const clientClosedRequest = 499;

/**
 * Records every API call once its response has been sent (requestLogEntry, which MCP tool calls
 * write theirs with too): a /mcp request whose every message was a tool call is recorded by those
 * entries alone, one per call, as its REST twin would be. A call whose client left is recorded too,
 * on 'close' ('finish' never comes): with the status it was answered with if the headers were out
 * (a stream), 499 if nothing was. Its cost is what its metering records charged, read with the row
 * (requestLogs.ts), since a cancelled job is settled after the client left.
 */
export function installRequestLog(app: Express, writer: RequestLogWriter): void {
  app.use((req, res, next) => {
    if (!isApiPath(req.path)) return next();
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      res.locals.responseBody = body;
      return json(body);
    };
    // 'close' comes after 'finish', or alone when the connection ended first.
    res.once('close', () => {
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
        status: res.headersSent ? res.statusCode : clientClosedRequest,
        body: locals.responseBody,
        projectId: locals.projectId,
        costMinor: locals.costMinor,
        cacheStatus: locals.cacheStatus,
      };
      writer.push(requestLogEntry(call, answer));
    });
    next();
  });
}
