import type { ChatProvider, TextGeneration } from '../../shared/providers/types.ts';

/** Asks `provider` one user message (50 tokens at most, never cancelled), keeping each delta it streams on the way. */
export async function streamedChat(
  provider: ChatProvider,
  content: string,
): Promise<{ out: TextGeneration; deltas: string[] }> {
  const deltas: string[] = [];
  const out = await provider.chat({
    messages: [{ role: 'user', content }],
    maxTokens: 50,
    signal: new AbortController().signal,
    onDelta: (piece) => deltas.push(piece),
  });
  return { out, deltas };
}
