/** A provider-independent token estimate (≈ 4 characters per token), used for holds and offline models. */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}
