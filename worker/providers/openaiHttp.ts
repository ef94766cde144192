import { createParser } from 'eventsource-parser';

import { isRetryableStatus, ProviderError, retryAfterMs } from '../../shared/providers/types.ts';

export type OpenAiSettings = { baseUrl: string; apiKey: string | undefined; timeoutMs: number };


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

async function errorFromResponse(
  res: Response,
  path: string,
  apiKey: string | undefined,
): Promise<ProviderError> {
  let detail = '';
  try {
    const body = (await res.text()).slice(0, 2000);
    try {
      const parsed = JSON.parse(body) as { error?: { message?: unknown } | string };
      detail = typeof parsed.error === 'string' ? parsed.error : String(parsed.error?.message ?? body);
    } catch {
      detail = body;
    }
  } catch {
    // The body is only for the log line; a failure to read it changes nothing.
  }
  const message = scrubSecrets(
    `openai ${path} answered ${res.status}${detail ? `: ${detail.slice(0, 300)}` : ''}`,
    apiKey,
  );
  return new ProviderError(message, isRetryableStatus(res.status), {
    status: res.status,
    retryAfterMs: retryAfterMs(res.headers.get('retry-after')),
  });
}

/**
 * An error a provider sends inside an event stream that began with 200 (OpenRouter, vLLM and other
 * proxies report an upstream failure mid-answer as `data: {"error": {...}}`); undefined for a chunk.
 * A numeric `code` is an HTTP status; without one the failure is taken as passing (an upstream fault).
 */
export function streamedError(
  json: unknown,
  path: string,
  apiKey: string | undefined,
): ProviderError | undefined {
  const error = (json as { error?: unknown } | null)?.error;
  if (error === undefined || error === null) return undefined;
  const { message, code } =
    typeof error === 'object'
      ? (error as { message?: unknown; code?: unknown })
      : { message: error, code: undefined };
  const status = typeof code === 'number' ? code : Number.parseInt(String(code), 10);
  const known = Number.isInteger(status) && status >= 400 && status < 600;
  const text = scrubSecrets(
    `openai ${path} streamed an error: ${String(message ?? 'unknown').slice(0, 300)}`,
    apiKey,
  );
  return new ProviderError(text, !known || isRetryableStatus(status), known ? { status } : undefined);
}

/**
 * One request to an OpenAI-compatible API, bounded by the provider timeout and the job's signal.
 * @throws ProviderAborted when `signal` aborts; ProviderError (retryable) on timeouts, network
 *   failures, 408/409/425/429/5xx; ProviderError (not retryable) on other non-2xx answers.
 */
export async function openaiRequest(
  settings: OpenAiSettings,
  path: string,
  body: Record<string, unknown> | FormData,
  signal: AbortSignal,
): Promise<{ res: Response; timeout: AbortSignal }> {
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  const combined = AbortSignal.any([signal, timeout]);
  const headers: Record<string, string> = { accept: 'application/json, text/event-stream' };
  if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;
  if (!(body instanceof FormData)) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`${settings.baseUrl}${path}`, {
      method: 'POST',
      headers,
      body: body instanceof FormData ? body : JSON.stringify(body),
      signal: combined,
    });
  } catch (error) {
    throw failure(error, signal, timeout, path, settings);
  }
  if (!res.ok) throw await errorFromResponse(res, path, settings.apiKey);
  return { res, timeout };
}

/** Classifies a thrown fetch or body-read error: our cancellation, the provider timeout, or the network. */
export function failure(
  error: unknown,
  signal: AbortSignal,
  timeout: AbortSignal | undefined,
  path: string,
  settings: OpenAiSettings,
): Error {
  if (signal.aborted) return new ProviderAborted(signal.reason);
  if (timeout?.aborted) {
    return new ProviderError(`openai ${path} timed out after ${settings.timeoutMs} ms`, true, {
      cause: error,
    });
  }
  if (error instanceof ProviderError) return error;
  const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
  return new ProviderError(scrubSecrets(`openai ${path} request failed (${code})`, settings.apiKey), true, {
    cause: error,
  });
}

/** Reads a JSON answer; a body that fails to arrive is classified like the request itself. */
export async function readJson(
  call: { res: Response; timeout: AbortSignal },
  path: string,
  settings: OpenAiSettings,
  signal: AbortSignal,
): Promise<unknown> {
  let text: string;
  try {
    text = await call.res.text();
  } catch (error) {
    throw failure(error, signal, call.timeout, path, settings);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(`openai ${path} answered malformed JSON`, true);
  }
}

/** Feeds a server-sent-event body to `onData` with each event's data, until the body ends. */
export async function readEventStream(res: Response, onData: (data: string) => void): Promise<void> {
  const parser = createParser({ onEvent: (event) => onData(event.data) });
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
    parser.feed(decoder.decode());
  } catch (error) {
    // `onData` refused the stream (an error event, malformed JSON): close the provider's connection
    // now rather than leave it streaming an answer nobody reads.
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    reader.releaseLock();
  }
}
