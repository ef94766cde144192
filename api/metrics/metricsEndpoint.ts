import type { RequestHandler } from 'express';
import type { Registry } from 'prom-client';

import { AppError } from '../../shared/errors/appError.ts';
import { sameSecret } from '../../shared/primitives/sameSecret.ts';
import { isPublicAddress } from '../../shared/webhooks/ssrf.ts';

/**
 * GET /metrics (Prometheus text format), outside the API and its request log. With METRICS_TOKEN
 * set it asks for `Authorization: Bearer <METRICS_TOKEN>`; without, it answers loopback and private
 * addresses only (a scraper inside the network) and is not there for anyone else.
 */
export function metricsEndpoint(registry: Registry, token: string | undefined): RequestHandler {
  return async (req, res) => {
    if (token !== undefined) {
      const given = /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1];
      if (given === undefined || !sameSecret(given, token)) {
        throw new AppError('invalid_api_key', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.', {
          headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
        });
      }
    } else if (isPublicAddress(req.ip ?? '')) {
      throw new AppError('not_found', 'No such path.');
    }
    res.setHeader('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  };
}
