import type { DatabasePool } from 'slonik';

import type { Config } from '../../shared/config/config.ts';
import type { OauthOptions } from '../../shared/oauth/oauthOptions.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import type { Clock } from '../../shared/primitives/clock.ts';
import type { ApiDocument } from '../openapi/document.ts';
import { CsrfKeys } from './csrf.ts';
import { BrowserSessions } from './sessions.ts';

/**
 * What every browser page stands on, built once per app: the OAuth server's consent page, the
 * account pages and the console share one session cookie, one set of CSRF keys and one clock.
 */
export type BrowserContext = {
  pool: DatabasePool;
  doc: ApiDocument;
  config: Config;
  clock: Clock;
  sessions: BrowserSessions;
  csrf: CsrfKeys;
  logger: Logger;
};

/** What the pages that end tokens (the OAuth server, the account pages) are each built from. */
export type TokenPagesInputs = {
  browser: BrowserContext;
  options: OauthOptions;
  /** Forgets this process's cached token lookups. */
  forgetTokens: () => void;
};

export function makeBrowserContext(
  base: Pick<BrowserContext, 'pool' | 'doc' | 'config' | 'logger'>,
  clock: Clock,
): BrowserContext {
  const { pool, doc, config, logger } = base;
  return {
    pool,
    doc,
    config,
    clock,
    // Secure cookies wherever the site is served over TLS.
    sessions: new BrowserSessions(pool, clock, config.publicBaseUrl.startsWith('https:')),
    csrf: new CsrfKeys(pool, clock),
    logger,
  };
}
