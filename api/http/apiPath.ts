import { apiBasePath } from '../../shared/config/config.ts';
import { compatBases } from '../compat/bases.ts';

const bases = [apiBasePath, ...compatBases];

/**
 * The one rule for "is this an API path", for every middleware that asks: the base path itself or
 * anything under it (or under a compatible API's base: its calls are the API's, logged the same), compared case-sensitively as URL paths are. It is the rule Express applies to
 * `app.use(apiBasePath, …)` once `case sensitive routing` is on (app.ts sets it before any
 * middleware), so what is routed to the API and what is logged as an API call cannot differ.
 */
export function isApiPath(path: string): boolean {
  return bases.some((base) => path === base || path.startsWith(`${base}/`));
}
