import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { z } from 'zod';

import { isRetryableStatus, ProviderError, retryAfterMs } from '../../shared/providers/types.ts';
import { ProviderAborted, scrubSecrets } from './providerErrors.ts';

/** Where a failure happened: the endpoint, the key to mask, and the call's bounds when it had them. */
export type FailureContext = {
  path: string;
  apiKey: string | undefined;
  timeoutMs: number;
  /** The job's signal: its abort is a cancellation, never a provider failure. */
  signal?: AbortSignal;
  /** The call's own deadline over the whole call (see callBounds.ts). */
  deadline?: AbortSignal;
};

/**
 * An answer read against the shape the protocol promises. The SDK checks none: one without that
 * shape (maybe a proxy's glitch) is a retryable ProviderError.
 */
export function parseAnswer<T>(schema: z.ZodType<T>, value: unknown, path: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ProviderError(`openai ${path} answered an unexpected shape`, true);
  return parsed.data;
}

/** The text of an error body (`{"message": …}` or a bare string), if it has one. */
function errorText(body: unknown): string | undefined {
  if (typeof body === 'string') return body;
  const message = (body as { message?: unknown } | null | undefined)?.message;
  return message === undefined || message === null ? undefined : String(message);
}

/** The network's own code (ECONNRESET, UND_ERR_SOCKET) from an error or its causes, else a name. */
function networkCode(error: unknown): string {
  let name = 'unknown';
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 4; depth++) {
    const { code, cause } = e as { code?: unknown; cause?: unknown };
    if (typeof code === 'string') return code;
    if (e instanceof Error && e.name !== 'Error') name = e.name;
    e = cause;
  }
  return name;
}

/**
 * A failed call to an OpenAI-compatible API, as the gateway understands it: ProviderAborted when the
 * job's signal aborted; otherwise a ProviderError, retryable for a timeout, a connection failure,
 * 408/409/425/429/5xx (with the provider's Retry-After) and an unreadable answer; an error event
 * streamed inside a 200 answer (OpenRouter, vLLM) is retryable unless its code is another 4xx.
 */
export function openAiFailure(error: unknown, context: FailureContext): Error {
  const { path, apiKey } = context;
  const text = (what: string) => scrubSecrets(`openai ${path} ${what}`, apiKey);
  if (context.signal?.aborted) return new ProviderAborted(context.signal.reason);
  if (context.deadline?.aborted || error instanceof APIConnectionTimeoutError) {
    return new ProviderError(text(`timed out after ${context.timeoutMs} ms`), true, { cause: error });
  }
  if (error instanceof ProviderError) return error;
  if (error instanceof APIUserAbortError || error instanceof APIConnectionError) {
    return new ProviderError(text(`request failed (${networkCode(error)})`), true, { cause: error });
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const detail = errorText(error.error) ?? error.message.replace(/^\d{3} /, '');
    return new ProviderError(
      text(`answered ${error.status}${detail ? `: ${detail.slice(0, 300)}` : ''}`),
      isRetryableStatus(error.status),
      { status: error.status, retryAfterMs: retryAfterMs(error.headers?.get('retry-after') ?? null) },
    );
  }
  if (error instanceof APIError) return streamedError(error.error, context);
  if (error instanceof SyntaxError) return new ProviderError(text('answered malformed JSON'), true);
  return new ProviderError(text(`request failed (${networkCode(error)})`), true, { cause: error });
}

/**
 * An error sent as `data: {"error": …}` inside an event stream that began with 200. A numeric
 * `code` is an HTTP status; without one the failure is taken as passing (an upstream fault).
 */
function streamedError(error: unknown, { path, apiKey }: FailureContext): ProviderError {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  const status = typeof code === 'number' ? code : Number.parseInt(String(code), 10);
  const known = Number.isInteger(status) && status >= 400 && status < 600;
  const message = scrubSecrets(
    `openai ${path} streamed an error: ${(errorText(error) ?? 'unknown').slice(0, 300)}`,
    apiKey,
  );
  return new ProviderError(message, !known || isRetryableStatus(status), known ? { status } : undefined);
}
