import { z } from 'zod';

/**
 * The price table in the workspace currency's minor unit (DESIGN.md "Prices"). Fractions are allowed
 * in the table; a call's cost is rounded up to a whole minor unit and is at least 1 for a billed live
 * call (settleUsage enforces the floor).
 */
export const priceTable = z
  .object({
    textInputPer1MTokens: z.number().min(0),
    textOutputPer1MTokens: z.number().min(0),
    // Input tokens a provider read from its prompt cache, and (Anthropic) wrote to it. Left out,
    // each is the input price, so caching changes no bill until an operator prices it.
    textCachedInputPer1MTokens: z.number().min(0).optional(),
    textCacheWritePer1MTokens: z.number().min(0).optional(),
    imagePerImage: z.number().min(0),
    embeddingInputPer1MTokens: z.number().min(0),
    transcriptionPerAudioSecond: z.number().min(0),
    ocrPerPage: z.number().min(0),
    videoPerSecond: z.number().min(0),
    /** A call answered from the response cache (Cache-TTL), whatever its capability; free by default. */
    cacheHitPerCall: z.number().min(0),
  })
  .strict();

export type Prices = z.infer<typeof priceTable>;

export const defaultPrices: Prices = Object.freeze({
  textInputPer1MTokens: 300,
  textOutputPer1MTokens: 1200,
  imagePerImage: 4,
  embeddingInputPer1MTokens: 2,
  transcriptionPerAudioSecond: 0.01,
  ocrPerPage: 1,
  videoPerSecond: 5,
  cacheHitPerCall: 0,
});

/**
 * The default table with the PRICES env JSON's entries laid over it, e.g. `{"imagePerImage": 8}`.
 * @throws Error naming the bad entries when PRICES is not JSON or names unknown or negative prices.
 */
export function parsePrices(pricesJson: string | undefined): Prices {
  let overrides: unknown = {};
  if (pricesJson !== undefined && pricesJson.trim() !== '') {
    try {
      overrides = JSON.parse(pricesJson);
    } catch {
      throw new Error('Invalid configuration: PRICES is not valid JSON');
    }
  }
  const parsed = priceTable.partial().safeParse(overrides);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  PRICES.${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze({ ...defaultPrices, ...parsed.data });
}

const perMillion = (tokens: number, price: number) => (tokens * price) / 1_000_000;

/** The price of a cached input token read, and of one written: the input price where not set. */
export function cachePrices(prices: Prices): { cachedInput: number; cacheWrite: number } {
  return {
    cachedInput: prices.textCachedInputPer1MTokens ?? prices.textInputPer1MTokens,
    cacheWrite: prices.textCacheWritePer1MTokens ?? prices.textInputPer1MTokens,
  };
}

/**
 * A text generation's token counts. `inputTokens` is the whole prompt; of it, `cachedInputTokens`
 * were read from the provider's prompt cache and `cacheWriteInputTokens` written to it.
 */
export type TextUsage = {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  cacheWriteInputTokens?: number;
};

/** The usage a text answer shows its caller (the spec's closed shape); the metering record keeps the rest. */
export function publicUsage(usage: TextUsage): { inputTokens: number; outputTokens: number } {
  return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens };
}

/**
 * What a text generation costs (fractional minor units; rounded by settlement): the prompt's
 * uncached tokens at the input price, its cached reads and cache writes at their own prices.
 */
export function textCost(prices: Prices, usage: TextUsage): number {
  const { cachedInput, cacheWrite } = cachePrices(prices);
  const cached = usage.cachedInputTokens ?? 0;
  const written = usage.cacheWriteInputTokens ?? 0;
  const uncached = Math.max(0, usage.inputTokens - cached - written);
  return (
    perMillion(uncached, prices.textInputPer1MTokens) +
    perMillion(cached, cachedInput) +
    perMillion(written, cacheWrite) +
    perMillion(usage.outputTokens, prices.textOutputPer1MTokens)
  );
}

export function imageCost(prices: Prices, images = 1): number {
  return images * prices.imagePerImage;
}

export function embeddingCost(prices: Prices, inputTokens: number): number {
  return perMillion(inputTokens, prices.embeddingInputPer1MTokens);
}

export function transcriptionCost(prices: Prices, audioSeconds: number): number {
  return Math.max(0, audioSeconds) * prices.transcriptionPerAudioSecond;
}

export function ocrCost(prices: Prices, pages: number): number {
  return pages * prices.ocrPerPage;
}

/**
 * An upper bound on the tokens a text may count as. Tokenizers emit at most one token per UTF-8
 * byte, so the byte length is a safe ceiling for a hold (the 4-characters estimate can undershoot
 * for non-Latin scripts, and a hold that undershoots would cap the charge below the real cost).
 */
export function maxTokensOf(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * The most a text generation can cost: every input byte a token at the dearest input-side price (a
 * cache write may cost more than plain input), and the whole output budget.
 */
export function maxTextCost(prices: Prices, input: { texts: string[]; maxOutputTokens: number }): number {
  const inputTokens = input.texts.reduce((n, t) => n + maxTokensOf(t), 0);
  const { cachedInput, cacheWrite } = cachePrices(prices);
  const dearestInput = Math.max(prices.textInputPer1MTokens, cachedInput, cacheWrite);
  return (
    perMillion(inputTokens, dearestInput) + perMillion(input.maxOutputTokens, prices.textOutputPer1MTokens)
  );
}

export function maxEmbeddingCost(prices: Prices, input: string[]): number {
  return embeddingCost(
    prices,
    input.reduce((n, t) => n + maxTokensOf(t), 0),
  );
}

/** Transcriptions are held for the longest clip the endpoint is meant for (spec: a few minutes). */
export const maxTranscriptionHoldSeconds = 3600;

export function maxTranscriptionCost(prices: Prices): number {
  return transcriptionCost(prices, maxTranscriptionHoldSeconds);
}

/** A video is billed per second of the rendered clip; it is held for the requested length. */
export function videoCost(prices: Prices, seconds: number): number {
  return Math.max(0, seconds) * prices.videoPerSecond;
}
