import { createServer, type Server } from 'node:http';

import type { Registry } from 'prom-client';

import type { Logger } from '../../shared/observability/logger.ts';
import { sameSecret } from '../../shared/primitives/sameSecret.ts';
import { isPublicAddress } from '../../shared/webhooks/ssrf.ts';

/**
 * A worker process's own GET /metrics on `port` (worker dynos take no other traffic), guarded as
 * the web's is: METRICS_TOKEN when set, else loopback and private addresses only.
 */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  token: string | undefined,
  logger: Pick<Logger, 'error'>,
): Promise<{ server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const refuse = (status: number, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers }).end();
    };
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') return refuse(404);
    if (token !== undefined) {
      const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (given === undefined || !sameSecret(given, token)) {
        return refuse(401, { 'WWW-Authenticate': 'Bearer realm="metrics"' });
      }
    } else if (isPublicAddress(req.socket.remoteAddress ?? '')) {
      return refuse(404);
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (error: unknown) => {
        logger.error({ err: error }, 'collecting metrics failed');
        refuse(500);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve());
  });
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
