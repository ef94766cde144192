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

/**
 * The signal one provider call runs under: the job's, and the provider's timeout over the whole
 * call. The SDKs' own timeouts bound a streamed answer only until its headers arrive, and a stream
 * cut by its signal may end as if it had finished: readers check `deadline` once the stream ends.
 */
export function callBounds(signal: AbortSignal, timeoutMs: number) {
  const deadline = AbortSignal.timeout(timeoutMs);
  return { signal, deadline, combined: AbortSignal.any([signal, deadline]) };
}
