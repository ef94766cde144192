/**
 * Where the compatible APIs are mounted (api/compat/): their calls are API calls (request log,
 * pipeline) answered in those APIs' shapes. An SDK takes the base as its `baseURL`.
 */
export const openAiBase = '/api/openai/v1';

export const anthropicBase = '/api/anthropic';

export const compatBases: readonly string[] = [openAiBase, anthropicBase];
