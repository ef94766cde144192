import type { GrantOptions } from '../../../shared/oauth/grants.ts';
import { oauthIssuer } from '../../../shared/oauth/issuer.ts';
import type { BrowserContext, TokenPagesInputs } from '../browserContext.ts';
import { MetadataClients } from './metadataClients.ts';

/** The authorization server's collaborators, built once per app: its consent page is a browser page. */
export type OauthServer = BrowserContext & {
  issuer: string;
  grants: GrantOptions;
  metadataClients: MetadataClients;
  /** Forgets this process's cached token lookups after tokens were ended (a rotation, a revocation, a cut-off). */
  forgetTokens(): void;
};

// Long enough for a client's racing refreshes (two tabs, a retry after a timeout) to land inside it.
const defaultGraceMs = 30_000;

export function makeOauthServer({ browser, options, forgetTokens }: TokenPagesInputs): OauthServer {
  const { clock } = browser;
  return {
    ...browser,
    issuer: oauthIssuer(browser.config.publicBaseUrl),
    grants: { clock, refreshGraceMs: options.refreshGraceMs ?? defaultGraceMs },
    metadataClients: new MetadataClients(browser.doc, options.clientMetadataFetch, clock),
    forgetTokens,
  };
}
