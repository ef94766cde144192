import type { Express } from 'express';

import type { Config } from '../../shared/config.ts';
import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';

/**
 * The Streamable HTTP transport's DNS-rebinding defence, before the credential is read: a browser
 * page may call POST /mcp only from the server's own origin or one MCP_ALLOWED_ORIGINS lists.
 * Requests without Origin (servers, CLIs, desktop clients) are not browsers' and pass.
 */
export function installMcpOrigin(app: Express, config: Config): void {
  const allowed = new Set([new URL(config.publicBaseUrl).origin, ...config.mcpAllowedOrigins]);
  app.use(apiBasePath, (req, _res, next) => {
    if (req.operation?.id !== 'platform.mcp') return next();
    const origin = req.get('origin');
    if (origin === undefined || allowed.has(origin)) return next();
    throw new AppError('origin_not_allowed', `Origin ${origin} may not call the MCP endpoint.`);
  });
}
