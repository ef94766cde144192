import type { DatabasePool } from 'slonik';

import { type Clock, systemClock } from '../../../shared/clock.ts';
import type { Config } from '../../../shared/config.ts';
import type { GrantOptions } from '../../../shared/oauth/grants.ts';
import { defaultSignInLimits, type SignInLimits } from '../../../shared/oauth/signIn.ts';
import { Semaphore } from '../../../shared/semaphore.ts';
import type { AppDeps } from '../../deps.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { CsrfKeys } from '../csrf.ts';
import { BrowserSessions } from '../sessions.ts';
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
  /** Password checks this process runs at once (SIGN_IN_HASH_CONCURRENCY), and a short line for them. */
  passwordChecks: Semaphore;
  sessions: BrowserSessions;
  csrf: CsrfKeys;
  metadataClients: MetadataClients;
  logger: AppDeps['logger'];
  /** Forgets this process's cached token lookups after tokens were ended (a rotation, a revocation, a cut-off). */
  forgetTokens(): void;
};

// Sign-ins that may wait for a password check: with checks of ~50 ms, a wait of at most a few
// hundred ms, which smooths a few people signing in at once; a flood beyond it is refused unqueued.
const passwordCheckLine = 4;

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
    passwordChecks: new Semaphore(deps.config.signInHashConcurrency, passwordCheckLine),
    sessions: new BrowserSessions(deps.pool, clock, deps.config.publicBaseUrl.startsWith('https:')),
    csrf: new CsrfKeys(deps.pool, clock),
    metadataClients: new MetadataClients(deps.doc, deps.oauth?.clientMetadataFetch, clock),
    logger: deps.logger,
    forgetTokens: () => deps.accessTokenCache?.clear(),
  };
}
