import express, { type Express } from 'express';

import { apiBasePath } from '../shared/config/config.ts';
import { AppError } from '../shared/errors/appError.ts';
import { anthropicHeaders } from './compat/anthropic/headers.ts';
import { anthropicApi } from './compat/anthropic/index.ts';
import { anthropicBase } from './compat/bases.ts';
import { mountCompat } from './compat/mount.ts';
import { openAiApi } from './compat/openai/index.ts';
import type { AppDeps } from './deps.ts';
import { installMcp } from './mcp/installMcp.ts';
import { installResourceMetadata } from './mcp/resourceMetadata.ts';
import { hirefireEndpoint } from './metrics/hirefireEndpoint.ts';
import { metricsEndpoint } from './metrics/metricsEndpoint.ts';
import { installCompression } from './middleware/installCompression.ts';
import { installErrorHandler } from './middleware/installErrorHandler.ts';
import { installRequestId } from './middleware/installRequestId.ts';
import { installRequestLog } from './middleware/installRequestLog.ts';
import { installServerSpan } from './middleware/installServerSpan.ts';
import { makeRequestValidation } from './openapi/requestValidation.ts';
import { makeResponseValidation } from './openapi/responseValidation.ts';
import { OperationPipeline } from './pipeline/pipeline.ts';
import { makeApiRouter } from './routes/index.ts';
import { operationFunctions } from './routes/operationFunctions.ts';
import { installWeb } from './web/index.ts';

/**
 * The HTTP tier: request id and logging wrap everything; then the operation pipeline (api/pipeline/,
 * where the contract's check order is written) runs before every API handler, and MCP tool calls
 * run through the same pipeline object.
 */
export function makeApp(deps: AppDeps): Express {
  const app = express();
  // Built once: REST requests and MCP tool calls (which call operations directly) share it.
  const validation = makeRequestValidation(deps.doc, deps.config.validateResponses);
  const pipeline = new OperationPipeline(
    { ...deps, validation },
    deps.config.validateResponses ? makeResponseValidation(deps.doc, deps.logger) : undefined,
  );
  // Before any middleware: Express builds its router on first use, with the setting of that moment.
  // URL paths are case-sensitive, and so is the API: /API/PUB/V1/… is not it (see apiPath.ts).
  app.set('case sensitive routing', true);
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.trustProxy);
  app.set('json replacer', (_key: string, value: unknown) =>
    typeof value === 'bigint' ? Number(value) : value,
  );

  // 0. With tracing on, the request's span: everything after runs inside it.
  if (deps.config.tracing) installServerSpan(app, deps.config.traceContextTrust, deps.config.traceSampling);
  // 1. Identity of the request, and its log line once it finishes.
  installRequestId(app);
  installRequestLog(app, deps.requestLog);
  // 1a. HTML, CSS and JSON bodies compressed for clients that accept it (streams never).
  installCompression(app);
  // 2. Liveness for load balancers and the status probe: no key, no database.
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  // 2a. Prometheus metrics for the operator's scraper, outside the API and its request log (none
  //     with METRICS=off), and HireFire's queue-latency endpoint when its token is set.
  if (deps.metrics) app.get('/metrics', metricsEndpoint(deps.metrics, deps.config.metricsToken));
  if (deps.config.hirefireToken !== undefined) {
    const hirefire = hirefireEndpoint(deps.pool, deps.config.hirefireToken);
    // Two routes rather than one with two paths: a span is named by its route's (single) pattern.
    app.get('/hirefire', hirefire);
    app.get('/hirefire/:token/info', hirefire);
  }
  // 2b. The web pages (sign-in, consent, account, console, status) and the OAuth endpoints: a sibling
  //     of the API router and MCP, outside the API base, with error bodies of their own.
  installWeb(app, deps);
  installResourceMetadata(app, deps);
  // 3. The operation is resolved (unknown paths and wrong methods end there, nothing read), then
  //    who is calling and may they, and is the input the contract's (pipeline/checks.ts).
  app.use(apiBasePath, pipeline.rest);
  // 4. Handlers: the MCP server (its tool calls run operations through the pipeline too), then the
  //    REST operations.
  const operations = operationFunctions(deps);
  installMcp(app, deps, operations, pipeline);
  app.use(apiBasePath, makeApiRouter(deps, operations));
  // 4a. The compatible APIs: their own paths and answer shapes over the same pipeline and work.
  mountCompat(app, deps, pipeline, openAiApi);
  // Anthropic's clients may send the key as x-api-key, and read our request id from request-id.
  app.use(anthropicBase, anthropicHeaders);
  mountCompat(app, deps, pipeline, anthropicApi);
  // 5. Documented operations without a handler on this server, and everything else.
  app.use((req) => {
    if (req.operation) {
      throw new AppError(
        'not_found',
        `${req.method} ${apiBasePath}${req.operation.path} is not available on this server.`,
      );
    }
    throw new AppError('not_found', `No endpoint ${req.method} ${req.path}.`);
  });
  installErrorHandler(app, deps.logger, deps.idempotency);
  return app;
}
