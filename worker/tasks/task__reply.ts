import { enqueueBrainSynthesis } from '../../shared/brain/synthesis.ts';
import { maxTextCost, textCost } from '../../shared/config/prices.ts';
import { routeTimeoutMs } from '../../shared/config/providersConfig.ts';
import type { JobRow } from '../../shared/db/queries/jobs.ts';
import type { Db } from '../../shared/db/sql.ts';
import { newId } from '../../shared/primitives/ids.ts';
import type { ChatMessage, ChatProvider } from '../../shared/providers/types.ts';
import { ProviderError } from '../../shared/providers/types.ts';
import { appendMessage, type ReplyJobInput, replyJobInput } from '../../shared/tasks/messages.ts';
import type { WorkerContext } from '../context.ts';
import { billedAt, callProvider, cancelledOutcome } from '../generationWork.ts';
import { type JobDefinition, PermanentJobError } from '../jobEngine.ts';
import { buildConversation } from '../reply/conversation.ts';
import { loadReplyContext } from '../reply/replyContext.ts';

export type TaskReplyOptions = {
  /** The chat provider for a key mode; defaults to the configured one (fixtures for test keys). */
  chatProvider?: (livemode: boolean) => ChatProvider;
  /** Output budget of one reply, which also sizes its credit hold. */
  maxOutputTokens?: number;
};

/** Why a reply could not be produced, as the assistant message the requester reads (never a silent hang). */
const failureText = {
  insufficient_credits:
    'I could not reply: this workspace is out of credits. Add credits, then send your message again.',
  key_spend_limit_reached:
    'I could not reply: the API key used for this message has reached its monthly spend cap. Raise the cap or use another key, then send your message again.',
  reply_failed:
    'I could not produce a reply because the model provider failed. Send your message again to retry.',
  task_invalid: 'I could not reply: this message could not be processed.',
} as const;
type FailureCode = keyof typeof failureText;

function failureCode(code: string): FailureCode {
  return Object.hasOwn(failureText, code) ? (code as FailureCode) : 'reply_failed';
}

type Prepared = { input: ReplyJobInput; messages: ChatMessage[] };

/**
 * `task__reply`: answers one user message of a task with an assistant message, on the job engine:
 * the reply's credit is held once per job in the worker (its size depends on the conversation), and
 * the reply, its settlement and the job's success commit in one transaction (task_messages.job_id is
 * unique as a second guard). Every way a reply can end without an answer, the reconciler's included,
 * writes a failed assistant message with the job's failure, so a task never waits silently.
 */
export function taskReply(ctx: WorkerContext, options: TaskReplyOptions = {}): JobDefinition<Prepared> {
  const chatFor = options.chatProvider ?? ((livemode: boolean) => ctx.providers(livemode).chat);
  const maxOutputTokens = options.maxOutputTokens ?? 2048;
  // Reserved at the route's dearest entry, billed at the one that answered; bounded by the whole route.
  const { text: reserved } = ctx.config.reservationPrices;
  const timeoutMs = routeTimeoutMs(ctx.config.providers, 'text');
  return {
    prepare: async (job) => {
      const parsed = replyJobInput.safeParse(job.input);
      if (!parsed.success) throw new PermanentJobError('task_invalid', failureText.task_invalid);
      const context = await loadReplyContext(ctx.pool, job.workspace_id, parsed.data);
      if (!context) throw new PermanentJobError('task_invalid', 'The task or the message to answer is gone.');
      return { input: parsed.data, messages: buildConversation(context) };
    },
    maxCost: (_job, { messages }) =>
      maxTextCost(reserved, { texts: messages.map((m) => m.content), maxOutputTokens }),
    run: async (job, { messages }, signal, helpers) => {
      const generation = await callProvider(helpers, signal, () =>
        chatFor(job.livemode).chat({
          messages,
          maxTokens: maxOutputTokens,
          // Everything before the message being answered is sent again, unchanged, with the next reply.
          stablePrefix: messages.length - 1,
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
        }),
      );
      if (generation === 'cancelled') return cancelledOutcome;
      if (generation.finishReason === 'cancelled') {
        // Cut off by the bound over the whole route, not by a cancellation: a half reply is not an
        // answer. (A provider's own whole-answer deadline, which comes first, ends it as `length`:
        // the reply as it stands, billed, like one that reached maxOutputTokens.)
        throw new ProviderError('the reply was cut off before it finished', true);
      }
      return {
        result: { model: generation.model, text: generation.text },
        usage: { ...generation.usage },
        ...billedAt(ctx, 'text', generation, job.livemode, (prices) => textCost(prices, generation.usage)),
      };
    },
    onSucceeded: async (tx, job, { input }, outcome) => {
      const { model, text } = outcome.result as { model: string; text: string };
      const reply = await appendMessage(tx, {
        id: newId('msg'),
        workspaceId: job.workspace_id,
        taskId: input.taskId,
        role: 'assistant',
        text,
        staffId: input.staffId,
        jobId: job.id,
        projectId: job.project_id,
      });
      // The reply ended: the task may be finished, so its brain page is (re)synthesised, debounced.
      if (reply) await enqueueBrainSynthesis(tx, input.taskId, ctx.config.brainSynthesisDebounceMs);
      return { messageId: reply?.id ?? null, model };
    },
    onFailed: async (tx, job, error) => {
      const code = failureCode(error.code);
      await appendFailure(tx, job, code);
      return { code, message: failureText[code] };
    },
  };
}

/** The failed reply the requester reads, when the job's input still names its task. */
async function appendFailure(tx: Db, job: JobRow, code: FailureCode): Promise<void> {
  const parsed = replyJobInput.safeParse(job.input);
  if (!parsed.success) return;
  await appendMessage(tx, {
    id: newId('msg'),
    workspaceId: job.workspace_id,
    taskId: parsed.data.taskId,
    role: 'assistant',
    text: failureText[code],
    status: 'failed',
    errorCode: code,
    staffId: parsed.data.staffId,
    jobId: job.id,
    projectId: job.project_id,
  });
}
