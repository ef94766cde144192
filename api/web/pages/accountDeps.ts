import { defaultSignInLimits, type SignInLimits } from '../../../shared/oauth/signIn.ts';
import { Semaphore } from '../../../shared/primitives/semaphore.ts';
import type { BrowserContext, TokenPagesInputs } from '../browserContext.ts';

/** What the sign-in and account pages need beyond the browser context, built once per app. */
export type AccountDeps = BrowserContext & {
  signInLimits: SignInLimits;
  /** Password checks this process runs at once (SIGN_IN_HASH_CONCURRENCY), and a short line for them. */
  passwordChecks: Semaphore;
  /** Forgets this process's cached token lookups after a person cut an app off. */
  forgetTokens(): void;
};

// Sign-ins that may wait for a password check: with checks of ~50 ms, a wait of at most a few
// hundred ms, which smooths a few people signing in at once; a flood beyond it is refused unqueued.
const passwordCheckLine = 4;

export function makeAccountDeps({ browser, options, forgetTokens }: TokenPagesInputs): AccountDeps {
  return {
    ...browser,
    signInLimits: options.signInLimits ?? defaultSignInLimits,
    passwordChecks: new Semaphore(browser.config.signInHashConcurrency, passwordCheckLine),
    forgetTokens,
  };
}
