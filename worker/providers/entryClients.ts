import type { ProviderSpec } from '../../shared/config/providersConfig.ts';
import type { EntryClients } from './clientTypes.ts';
import { localChat, localEmbeddings, localImages, localTranscription } from './local.ts';

const localClients: EntryClients = {
  text: localChat,
  image: localImages,
  embedding: localEmbeddings,
  transcription: localTranscription,
};

/**
 * The clients of one route entry: its provider's protocol, asked for its model. A protocol's module,
 * and the vendor SDK it wraps, is loaded only when the configuration names a provider of its type.
 */
export async function entryClients(spec: ProviderSpec, model: string): Promise<Partial<EntryClients>> {
  const settings = {
    baseUrl: spec.baseUrl ?? '',
    apiKey: spec.apiKey,
    timeoutMs: spec.timeoutMs,
    firstByteTimeoutMs: spec.firstByteTimeoutMs,
  };
  switch (spec.type) {
    case 'local':
      return localClients;
    case 'openai': {
      const { openAiEntryClients } = await import('./openai.ts');
      return openAiEntryClients(settings, model);
    }
    case 'anthropic': {
      const { anthropicChat } = await import('./anthropic.ts');
      // The Messages API generates text only; PROVIDERS refuses routing anything else to it.
      return { text: anthropicChat(settings, model) };
    }
    default: {
      const never: never = spec.type;
      throw new Error(`unknown provider type ${String(never)}`);
    }
  }
}
