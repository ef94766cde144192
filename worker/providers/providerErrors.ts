/**
 * Masks the configured key and anything shaped like a provider key: providers echo a (partly
 * masked) key in "invalid key" errors, and these messages reach logs and job records.
 */
export function scrubSecrets(text: string, apiKey: string | undefined): string {
  let out = apiKey ? text.split(apiKey).join('[redacted]') : text;
  out = out.replace(/\b(sk|rk|pk)-[A-Za-z0-9_*.-]{6,}/g, '[redacted]');
  return out.replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
}

/** Thrown when the job's own signal aborted (cancellation or shutdown), never for a provider timeout. */
export class ProviderAborted extends Error {
  constructor(reason: unknown) {
    super('provider call aborted', { cause: reason });
    this.name = 'ProviderAborted';
  }
}
