import type { RequestHandler } from 'express';

import type { AppError } from '../../shared/errors/appError.ts';
import type { AppDeps } from '../deps.ts';

/** An error as a compatible API answers it: its status, body and headers (Retry-After, x-ratelimit-*). */
export type ShapedError = { status: number; body: unknown; headers: Record<string, string> };

/** Turns the platform's error into a compatible API's own (OpenAI's envelope, Anthropic's). */
export type ErrorShaper = (error: AppError, requestId: string) => ShapedError;

/**
 * A foreign API served on the platform: its operations are the OpenAPI document's whose path item
 * says `x-svc-base: <base>` (their own operation ids, the native operations' scopes), run through
 * the same pipeline as the API's, by handlers that translate to and from the native work.
 */
export type CompatApi = {
  base: string;
  shapeError: ErrorShaper;
  /**
   * The credential when the API's clients send it elsewhere than `Authorization: Bearer` (Anthropic's
   * `x-api-key`): read before the pipeline, which then authenticates it as a bearer credential.
   */
  credentialOf?(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined;
  /** operationId → handler, for every operation the document mounts at `base`. */
  handlers(deps: AppDeps): Record<string, RequestHandler>;
};
