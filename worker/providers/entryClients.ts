import type { ProviderSpec } from '../../shared/config/providersConfig.ts';
import { anthropicChat } from './anthropic.ts';
import type { EntryClients } from './gateway.ts';
import { localChat, localEmbeddings, localImages, localTranscription } from './local.ts';
import { openAiEntryClients } from './openai.ts';

const localClients: EntryClients = {
  text: localChat,
  image: localImages,
  embedding: localEmbeddings,
  transcription: localTranscription,
};

/** The clients of one route entry: its provider's protocol, asked for its model. */
export function entryClients(spec: ProviderSpec, model: string): Partial<EntryClients> {
  const settings = { baseUrl: spec.baseUrl ?? '', apiKey: spec.apiKey, timeoutMs: spec.timeoutMs };
  switch (spec.type) {
    case 'local':
      return localClients;
    case 'openai':
      return openAiEntryClients(settings, model);
    case 'anthropic':
      // The Messages API generates text only; PROVIDERS refuses routing anything else to it.
      return { text: anthropicChat(settings, model) };
    default: {
      const never: never = spec.type;
      throw new Error(`unknown provider type ${String(never)}`);
    }
  }
}
