import express, { type Express } from 'express';

import { apiBasePath } from '../shared/config.ts';
import { AppError } from '../shared/errors/appError.ts';
import type { AppDeps } from './deps.ts';
import { installResourceMetadata } from './mcp/resourceMetadata.ts';
import { installAuthentication, installScopes } from './middleware/installAuth.ts';
import { installBodyParser } from './middleware/installBodyParsers.ts';
import { installErrorHandler } from './middleware/installErrorHandler.ts';
import { installIdempotency } from './middleware/installIdempotency.ts';
import { installMcpOrigin } from './middleware/installMcpOrigin.ts';
import { installOperation } from './middleware/installOperation.ts';
import { installRateLimit } from './middleware/installRateLimit.ts';
import { installRequestId } from './middleware/installRequestId.ts';
import { installRequestLog } from './middleware/installRequestLog.ts';
import { installStorableText } from './middleware/installStorableText.ts';
import { installValidator } from './middleware/installValidator.ts';
import { makeRequestValidation } from './openapi/requestValidation.ts';
import { makeApiRouter } from './routes/index.ts';
import { installWeb } from './web/index.ts';

/**
 * The HTTP tier. The order is the contract's check order (DESIGN.md): request id and logging wrap
 * everything; the route is resolved before authentication so unknown paths answer 404; the key is
 * checked from the headers before any body is read; then the body (bounded per operation), the
 * scopes, the rate limit, body validation and idempotency, before any handler.
 */
export function makeApp(deps: AppDeps): Express {
  const app = express();
  // Compiled once: the pipeline and MCP tool calls (which run handlers directly) share it.
  const validation = makeRequestValidation(deps.doc, deps.config.validateResponses, deps.logger);
  // Before any middleware: Express builds its router on first use, with the setting of that moment.
  // URL paths are case-sensitive, and so is the API: /API/PUB/V1/… is not it (see apiPath.ts).
  app.set('case sensitive routing', true);
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.trustProxy);
  app.set('json replacer', (_key: string, value: unknown) =>
    typeof value === 'bigint' ? Number(value) : value,
  );

  // 1. Identity of the request, and its log line once it finishes.
  installRequestId(app);
  installRequestLog(app, deps.requestLog);
  // 2. Liveness for load balancers and the status probe: no key, no database.
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  // 2b. The web pages (sign-in, consent, account, console, status) and the OAuth endpoints: a sibling
  //     of the API router and MCP, outside the API base, with error bodies of their own.
  installWeb(app, deps);
  installResourceMetadata(app, deps);
  // 3. The operation is resolved: unknown paths and wrong methods end here, nothing read.
  installOperation(app, deps.doc);
  // 4. Who is calling and may they, in the fixed order: the key (headers only), then the body
  //    (its errors deferred), scopes, rate limit, schema.
  installMcpOrigin(app, deps.config);
  installAuthentication(
    app,
    deps.keyCache,
    deps.credentialResolvers,
    deps.failedAuth,
    deps.config.publicBaseUrl,
  );
  installBodyParser(app);
  installScopes(app, deps.config.publicBaseUrl);
  installRateLimit(app, deps.rateLimiter, deps.config.rateLimitPerMinute);
  installValidator(app, validation);
  installStorableText(app);
  installIdempotency(app, deps.idempotency);
  // 5. Handlers.
  app.use(apiBasePath, makeApiRouter(deps, validation));
  // 6. Documented operations without a handler on this server, and everything else.
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
