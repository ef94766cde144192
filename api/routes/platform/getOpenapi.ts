import type { RequestHandler } from 'express';

import { baseUrl } from '../../../shared/config/config.ts';
import type { AppDeps } from '../../deps.ts';
import { publicDocument } from '../../openapi/document.ts';

export function getOpenapi({ doc, config }: AppDeps): RequestHandler {
  const body = publicDocument(doc, baseUrl(config));
  return (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(body);
  };
}
