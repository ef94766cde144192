import { publicUsage, textCost } from '../../shared/config/prices.ts';
import { TextDeltaPublisher } from '../../shared/generation/textDeltas.ts';
import { textJobInput } from '../../shared/jobs/generationInputs.ts';
import type { ChatMessage } from '../../shared/providers/types.ts';
import type { WorkerContext } from '../context.ts';
import { billedAt, callProvider, cancelledOutcome } from '../generationWork.ts';
import { type InlineJobDefinition, WorkerStopping } from '../jobEngine.ts';

/**
 * POST /text. Streamed requests publish each delta as it is produced; a cancelled reply is
 * billed for the tokens produced before it stopped.
 */
export function textGenerate(ctx: WorkerContext): InlineJobDefinition {
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = textJobInput.parse(job.input);
      // A compatible API's conversation goes as it came; POST /text's prompt becomes one.
      const messages: ChatMessage[] = input.messages ?? [
        ...(input.system ? [{ role: 'system' as const, content: input.system }] : []),
        { role: 'user', content: input.prompt },
      ];
      const publisher = input.stream
        ? new TextDeltaPublisher(ctx.pool, job.id, (error) =>
            ctx.logger.warn({ err: error, jobId: job.id }, 'delta notify failed'),
          )
        : undefined;
      const provider = ctx.providers(job.livemode).chat;
      const generation = await callProvider(helpers, signal, () =>
        provider.chat({
          messages,
          maxTokens: input.maxTokens,
          signal,
          onDelta: publisher && ((t) => publisher.push(t)),
          route: input.route,
          options: input.options,
        }),
      );
      // Deltas must all be published before the job's final status: the api ends the stream on it.
      await publisher?.flush();
      if (
        generation !== 'cancelled' &&
        generation.finishReason === 'cancelled' &&
        helpers.abortSignal.aborted
      ) {
        throw new WorkerStopping();
      }
      // Stopped before a single token: the caller got nothing, so nothing is billed (not even the prompt).
      if (generation === 'cancelled' || (generation.finishReason === 'cancelled' && generation.text === '')) {
        return cancelledOutcome;
      }
      const usage = generation.usage;
      return {
        // The spec's usage is { inputTokens, outputTokens }: the cache counts go to the metering record.
        result: {
          text: generation.text,
          model: generation.model,
          usage: publicUsage(usage),
          // Read by the compatible APIs only (chatJobResult); POST /text's body leaves them out.
          finishReason: generation.finishReason,
          ...(usage.cachedInputTokens ? { cachedInputTokens: usage.cachedInputTokens } : {}),
          ...(usage.cacheWriteInputTokens ? { cacheWriteInputTokens: usage.cacheWriteInputTokens } : {}),
          ...(generation.stopSequence ? { stopSequence: generation.stopSequence } : {}),
          ...(generation.toolCalls ? { toolCalls: generation.toolCalls } : {}),
        },
        usage: { ...usage },
        ...billedAt(ctx, 'text', generation, job.livemode, (prices) => textCost(prices, usage)),
        cancelled: generation.finishReason === 'cancelled',
      };
    },
  };
}
