import type { Express, Request } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { inspectJson, unstorableMessage } from '../../shared/storableText.ts';

function decodedSegments(path: string): string[] {
  return path.split('/').map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      // Malformed escapes are the validator's and the router's to answer.
      return segment;
    }
  });
}

/**
 * Text PostgreSQL cannot store (U+0000, unpaired surrogates) in the path, the query and a JSON body,
 * as a validator-shaped error, so a field with its own code (a prompt answers
 * invalid_generation_prompt) keeps it; undefined when all is storable.
 */
export function unstorableTextError(req: Request): Error | undefined {
  const paths = [
    ...(req.path.includes('%') && inspectJson(decodedSegments(req.path)).unstorable.length > 0
      ? ['/path']
      : []),
    ...(req.url.includes('?') ? inspectJson(req.query).unstorable.map((p) => `/query/${p}`) : []),
    // The body was inspected as it was parsed (installBodyParsers), in the same pass as its depth.
    ...(req.unstorableBody ?? []).map((p) => `/body/${p}`),
  ];
  if (paths.length === 0) return undefined;
  const errors = paths.map((path) => ({ path, message: unstorableMessage, errorCode: 'storable.text' }));
  return Object.assign(new Error('unstorable text'), { status: 400, errors });
}

/** Refuses unstorable text (unstorableTextError) after the schema checks. */
export function installStorableText(app: Express): void {
  app.use(apiBasePath, (req, _res, next) => {
    next(unstorableTextError(req));
  });
}
