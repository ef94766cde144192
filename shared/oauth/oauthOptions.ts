import type { Clock } from '../primitives/clock.ts';
import type { MetadataFetchOptions } from './clientMetadataDocument.ts';
import type { SignInLimits } from './signIn.ts';

/** What tests may change about the authorization server: its clock, the refresh grace window, sign-in limits. */
export type OauthOptions = {
  clock?: Clock;
  refreshGraceMs?: number;
  signInLimits?: SignInLimits;
  /** How client metadata documents are fetched (tests serve them on loopback). */
  clientMetadataFetch?: Partial<MetadataFetchOptions>;
};
