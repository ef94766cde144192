/** The model names the local provider (worker/providers/local.ts) answers with, per capability. */
export const localModels = {
  text: 'local-echo-1',
  image: 'local-pattern-image-1',
  embedding: 'local-hash-embedding-1',
  transcription: 'local-offline-transcriber-1',
} as const;
