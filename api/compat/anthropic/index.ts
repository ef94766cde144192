import { anthropicBase } from '../bases.ts';
import type { CompatApi } from '../compatApi.ts';
import { countTokens } from './countTokens.ts';
import { anthropicError } from './errors.ts';
import { messages } from './messages.ts';

/**
 * The Anthropic-compatible API (docs/compatible-apis.md), an Anthropic SDK's `baseURL` being
 * `<PUBLIC_BASE_URL>/api/anthropic` (the SDK appends /v1/…). Its headers are translated first
 * (anthropicHeaders, installed before it in app.ts).
 */
export const anthropicApi: CompatApi = {
  base: anthropicBase,
  shapeError: anthropicError,
  handlers: (deps) => ({
    'anthropic.messages': messages(deps),
    'anthropic.messages.count_tokens': countTokens(deps),
  }),
};
