import { apiBasePath } from '../../shared/config/config.ts';

/**
 * The one rule for "is this an API path", for every middleware that asks: the base path itself or
 * anything under it, compared case-sensitively as URL paths are. It is the rule Express applies to
 * `app.use(apiBasePath, …)` once `case sensitive routing` is on (app.ts sets it before any
 * middleware), so what is routed to the API and what is logged as an API call cannot differ.
 */
export function isApiPath(path: string): boolean {
  return path === apiBasePath || path.startsWith(`${apiBasePath}/`);
}
