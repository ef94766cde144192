import { openAiBase } from '../bases.ts';
import type { CompatApi } from '../compatApi.ts';
import { chatCompletions } from './chatCompletions.ts';
import { embeddings } from './embeddings.ts';
import { openAiError } from './errors.ts';
import { imageGenerations } from './images.ts';
import { listModels, retrieveModel } from './models.ts';
import { audioTranscriptions } from './transcriptions.ts';

/** The OpenAI-compatible API (docs/compatible-apis.md), an OpenAI SDK's `baseURL` being `<PUBLIC_BASE_URL>/api/openai/v1`. */
export const openAiApi: CompatApi = {
  base: openAiBase,
  shapeError: openAiError,
  handlers: (deps) => ({
    'openai.chat.completions': chatCompletions(deps),
    'openai.embeddings': embeddings(deps),
    'openai.images.generations': imageGenerations(deps),
    'openai.audio.transcriptions': audioTranscriptions(deps),
    'openai.models.list': listModels(deps),
    'openai.models.retrieve': retrieveModel(deps),
  }),
};
