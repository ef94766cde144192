import type { JobHelpers, Task } from 'graphile-worker';

import {
  finishJob,
  type JobRow,
  lockJob,
  markJobQueued,
  markJobRunning,
} from '../../shared/db/queries/jobs.ts';
import { attachJobHold, findKeySpendCap } from '../../shared/db/queries/tasks.ts';
import { findWorkspaceCurrency } from '../../shared/db/queries/workspaces.ts';
import type { Db } from '../../shared/db/sql.ts';
import { AppError, coerceError } from '../../shared/errors/appError.ts';
import { newId } from '../../shared/ids.ts';
import { jobPayload } from '../../shared/jobs.ts';
import { type Payer, releaseHold, reserveCredits, settleUsage } from '../../shared/metering.ts';
import { loadPrices, maxTextCost, textCost } from '../../shared/prices.ts';
import { type ChatProvider, ProviderError, type TextGeneration } from '../../shared/providers/types.ts';
import { appendMessage, type ReplyJobInput, replyJobInput } from '../../shared/tasks/messages.ts';
import { installWebhookFanout } from '../../shared/webhooks/fanout.ts';
import type { WorkerContext } from '../context.ts';
import { selectProviders } from '../providers/index.ts';
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

/** Writes the failed reply and fails the job, returning any hold, all in one transaction. Idempotent. */
async function failReply(tx: Db, job: JobRow, input: ReplyJobInput | null, code: FailureCode): Promise<void> {
  const current = await lockJob(tx, job.id);
  if (!current || current.status !== 'running') return;
  if (current.hold_id !== null) await releaseHold(tx, current.hold_id);
  if (input) {
    await appendMessage(tx, {
      id: newId('msg'),
      workspaceId: job.workspace_id,
      taskId: input.taskId,
      role: 'assistant',
      text: failureText[code],
      status: 'failed',
      errorCode: code,
      staffId: input.staffId,
      jobId: job.id,
      projectId: job.project_id,
    });
  }
  await finishJob(tx, job.id, {
    status: 'failed',
    result: null,
    error: { code, message: failureText[code] },
    costMinor: 0,
  });
}

type Reservation = { kind: 'held'; holdId: string | null } | { kind: 'stop' };

/**
 * Reserves the reply's maximum cost against the job's project, once per job (a retried attempt
 * reuses the hold). Test keys reserve nothing. When the balance or the key's cap is used up, the
 * reply fails visibly in the same transaction.
 */
async function reserveReply(
  ctx: WorkerContext,
  job: JobRow,
  input: ReplyJobInput,
  maxCostMinor: number,
): Promise<Reservation> {
  if (!job.livemode || job.project_id === null) return { kind: 'held', holdId: null };
  if (job.hold_id !== null) return { kind: 'held', holdId: job.hold_id };
  const projectId = job.project_id;
  return ctx.pool.transaction(async (tx): Promise<Reservation> => {
    const current = await lockJob(tx, job.id);
    if (!current || current.status !== 'running') return { kind: 'stop' };
    if (current.hold_id !== null) return { kind: 'held', holdId: current.hold_id };
    // The job carries who pays; the key's cap is read fresh.
    const payer: Payer = {
      livemode: true,
      workspaceId: job.workspace_id,
      keyId: job.key_id,
      monthlySpendCapMinor: job.key_id === null ? null : await findKeySpendCap(tx, job.key_id),
    };
    try {
      const hold = await reserveCredits(tx, {
        principal: payer,
        projectId,
        operation: job.type,
        maxCostMinor,
        requestId: job.request_id ?? job.id,
      });
      if (hold) await attachJobHold(tx, job.id, hold.holdId);
      return { kind: 'held', holdId: hold?.holdId ?? null };
    } catch (error) {
      // reserveCredits refuses before it writes anything, so this transaction can still record the refusal.
      if (
        error instanceof AppError &&
        (error.code === 'insufficient_credits' || error.code === 'key_spend_limit_reached')
      ) {
        await failReply(tx, job, input, error.code);
        return { kind: 'stop' };
      }
      throw error;
    }
  });
}

/** Commits the reply, its settlement and the job's success together, under the job's row lock. */
async function completeReply(
  ctx: WorkerContext,
  job: JobRow,
  input: ReplyJobInput,
  generation: TextGeneration,
  costMinor: number,
): Promise<void> {
  await ctx.pool.transaction(async (tx) => {
    const current = await lockJob(tx, job.id);
    if (!current || current.status !== 'running') return;
    const reply = await appendMessage(tx, {
      id: newId('msg'),
      workspaceId: job.workspace_id,
      taskId: input.taskId,
      role: 'assistant',
      text: generation.text,
      staffId: input.staffId,
      jobId: job.id,
      projectId: job.project_id,
    });
    const charge =
      job.project_id === null
        ? 0
        : await settleUsage(tx, {
            holdId: current.hold_id,
            jobId: job.id,
            workspaceId: job.workspace_id,
            projectId: job.project_id,
            keyId: job.key_id,
            operation: job.type,
            livemode: job.livemode,
            usage: { ...generation.usage },
            costMinor,
            currency: await findWorkspaceCurrency(tx, job.workspace_id),
            requestId: job.request_id,
          });
    await finishJob(tx, job.id, {
      status: 'succeeded',
      result: { messageId: reply?.id ?? null, model: generation.model },
      error: null,
      costMinor: charge,
    });
  });
}

/**
 * A failure that trying again may fix: a ProviderError says so itself (timeouts, 5xx and 429 are
 * retryable, a refused request is not); anything else (a bug, a dropped connection) is retried.
 * Read structurally, not with instanceof, so an error from another module realm is judged the same.
 */
function isRetryable(error: Error): boolean {
  const { retryable } = error as { retryable?: unknown };
  return error.name !== 'ProviderError' || retryable !== false;
}

/**
 * `task__reply`: answers one user message of a task with an assistant message. It follows runJob's
 * exactly-once rules: the job row moves queued → running → succeeded | failed, the credit hold is
 * taken once per job, and the reply, the settlement and the final status commit in one transaction
 * under the job's lock, so a retried attempt can neither reply nor bill twice (task_messages.job_id
 * is unique as a second guard). Every way a reply can end without an answer writes a failed
 * assistant message, so a task never waits silently.
 */
export function taskReply(ctx: WorkerContext, options: TaskReplyOptions = {}): Task {
  installWebhookFanout();
  const chatFor = options.chatProvider ?? ((livemode: boolean) => selectProviders(ctx.config, livemode).chat);
  const maxOutputTokens = options.maxOutputTokens ?? 2048;
  return async (rawPayload: unknown, helpers: JobHelpers) => {
    const { jobId } = jobPayload.parse(rawPayload);
    const job = await markJobRunning(ctx.pool, jobId);
    if (!job) {
      helpers.logger.info(`reply job ${jobId} already finished or gone`);
      return;
    }
    const parsed = replyJobInput.safeParse(job.input);
    if (!parsed.success) {
      helpers.logger.error(`reply job ${jobId} has an unreadable input; failing it`);
      await ctx.pool.transaction((tx) => failReply(tx, job, null, 'task_invalid'));
      return;
    }
    const input = parsed.data;
    try {
      const context = await loadReplyContext(ctx.pool, job.workspace_id, input);
      if (!context) {
        helpers.logger.warn(`reply job ${jobId}: task or message is gone`);
        await ctx.pool.transaction((tx) => failReply(tx, job, null, 'task_invalid'));
        return;
      }
      const messages = buildConversation(context);
      const prices = loadPrices(ctx.config);
      const maxCost = maxTextCost(prices, { texts: messages.map((m) => m.content), maxOutputTokens });
      const reservation = await reserveReply(ctx, job, input, maxCost);
      if (reservation.kind === 'stop') return;
      const generation = await chatFor(job.livemode).chat({
        messages,
        maxTokens: maxOutputTokens,
        signal: AbortSignal.any([helpers.abortSignal, AbortSignal.timeout(ctx.config.provider.timeoutMs)]),
      });
      if (generation.finishReason === 'cancelled') {
        throw new ProviderError('the reply was cut off before it finished', true);
      }
      await completeReply(ctx, job, input, generation, textCost(prices, generation.usage));
    } catch (thrown) {
      const error = coerceError(thrown);
      const lastAttempt = helpers.job.attempts >= helpers.job.max_attempts;
      if (helpers.abortSignal.aborted || (isRetryable(error) && !lastAttempt)) {
        // Retried with graphile-worker's backoff; the job reads as queued meanwhile and keeps its hold.
        await markJobQueued(ctx.pool, jobId);
        throw error;
      }
      helpers.logger.error(`reply job ${jobId} failed for good: ${error.message}`);
      await ctx.pool.transaction((tx) => failReply(tx, job, input, 'reply_failed'));
    }
  };
}
