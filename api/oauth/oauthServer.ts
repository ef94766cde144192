import type { DatabasePool } from 'slonik';

import { type Clock, systemClock } from '../../shared/clock.ts';
import type { Config } from '../../shared/config.ts';
import type { GrantOptions } from '../../shared/oauth/grants.ts';
import { defaultSignInLimits, type SignInLimits } from '../../shared/oauth/signIn.ts';
import type { AppDeps } from '../deps.ts';
import type { ApiDocument } from '../openapi/document.ts';
import { CsrfKeys } from '../pages/csrf.ts';
import { BrowserSessions } from '../pages/sessions.ts';
import { MetadataClients } from './metadataClients.ts';

/** The authorization server's collaborators, built once per app. */
export type OauthServer = {
  pool: DatabasePool;
  doc: ApiDocument;
  config: Config;
  issuer: string;
  clock: Clock;
  grants: GrantOptions;
  signInLimits: SignInLimits;
  sessions: BrowserSessions;
  csrf: CsrfKeys;
  metadataClients: MetadataClients;
  logger: AppDeps['logger'];
  /** Forgets this process's cached token lookups after tokens were ended (a rotation, a revocation, a cut-off). */
  forgetTokens(): void;
};

// Long enough for a client's racing refreshes (two tabs, a retry after a timeout) to land inside it.
const defaultGraceMs = 30_000;

export function makeOauthServer(deps: AppDeps): OauthServer {
  const clock = deps.oauth?.clock ?? systemClock;
  return {
    pool: deps.pool,
    doc: deps.doc,
    config: deps.config,
    issuer: `${deps.config.publicBaseUrl}/oauth`,
    clock,
    grants: { clock, refreshGraceMs: deps.oauth?.refreshGraceMs ?? defaultGraceMs },
    signInLimits: deps.oauth?.signInLimits ?? defaultSignInLimits,
    sessions: new BrowserSessions(deps.pool, clock, deps.config.publicBaseUrl.startsWith('https:')),
    csrf: new CsrfKeys(deps.pool),
    metadataClients: new MetadataClients(deps.doc, deps.oauth?.clientMetadataFetch, clock),
    logger: deps.logger,
    forgetTokens: () => deps.accessTokenCache?.clear(),
  };
}
