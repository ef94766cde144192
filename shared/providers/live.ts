import type { Config } from '../config.ts';
import { ProviderError, type Providers } from './types.ts';

// Placeholder until the generation issue lands the `local` and `openai` providers (issue 3).
export function makeLiveProviders(_config: Config): Providers {
  const unavailable = async (): Promise<never> => {
    throw new ProviderError('live providers are not built yet', false);
  };
  return {
    chat: { chat: unavailable },
    images: { generate: unavailable },
    embeddings: { embed: unavailable },
    transcription: { transcribe: unavailable },
    ocr: { extract: unavailable },
  };
}
