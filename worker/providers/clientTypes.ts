import type {
  ChatProvider,
  EmbeddingProvider,
  ImageProvider,
  TranscriptionProvider,
} from '../../shared/providers/types.ts';

/** The routed capabilities' clients for one route entry (its provider's protocol, its model). */
export type EntryClients = {
  text: ChatProvider;
  image: ImageProvider;
  embedding: EmbeddingProvider;
  transcription: TranscriptionProvider;
};

/**
 * What an entry's HTTP client is built from: its provider's base URL, key (none for a keyless
 * server), the deadline over a whole call and the first-byte deadline of a streamed one (default:
 * the whole-call deadline).
 */
export type ProviderSettings = {
  baseUrl: string;
  apiKey: string | undefined;
  timeoutMs: number;
  firstByteTimeoutMs?: number;
};
