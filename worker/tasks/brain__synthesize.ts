import type { Task } from 'graphile-worker';

import { extractiveSummary, type PageText } from '../../shared/brain/extractiveSummary.ts';
import { writeTaskPage } from '../../shared/brain/pages.ts';
import { slugify } from '../../shared/brain/slug.ts';
import { routesOnlyLocal, routeTimeoutMs } from '../../shared/config/providersConfig.ts';
import { findTaskPage } from '../../shared/db/queries/brainPages.ts';
import { loadTaskSource, type SourceMessage } from '../../shared/db/queries/taskBrainSource.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { brainSynthesizePayload } from '../../shared/queue/taskMap.ts';
import { summaryMessages } from '../brain/summaryPrompt.ts';
import type { WorkerContext } from '../context.ts';

const maxMessages = 200;

/**
 * `brain__synthesize`: writes the brain page of one finished task. A task is finished when its last
 * message is an assistant reply and no reply to it is queued or running; the job is scheduled (with a
 * debounce) when a reply ends, so a task still being worked on is skipped here and synthesised after
 * its last reply. Synthesis is a platform feature and is not billed (like brain search): the `local`
 * provider writes an extractive summary, `openai` a model summary through chat completions (for
 * tasks whose last reply was made for a live key; test-key tasks get the extractive summary).
 * Provider failures throw, so graphile-worker retries with backoff. Two runs for one task at once
 * (the job key keeps one queued, but a run may still be going when the next starts) both write,
 * under the workspace's page lock: one page, the later synthesis wins, neither fails.
 */
export function brainSynthesize(ctx: WorkerContext): Task {
  return async (rawPayload, helpers) => {
    const { taskId } = brainSynthesizePayload.parse(rawPayload);
    const source = await loadTaskSource(ctx.pool, taskId, maxMessages);
    if (!source || !source.task.finished || source.messages.length === 0) return;
    const { task, messages } = source;
    const existing = await findTaskPage(ctx.pool, taskId);
    if (existing && existing.synthesized_through_seq >= task.last_message_seq) return;
    const text = await pageText(ctx, task.live, task.title, messages);
    // Another synthesis of this task may be past this point too (another worker): the write settles it.
    const page = await writeTaskPage(ctx.pool, {
      id: newId('page'),
      workspaceId: task.workspace_id,
      taskId,
      slug: slugify(text.title),
      title: text.title.slice(0, 500),
      body: text.body,
      throughSeq: task.last_message_seq,
    });
    if (page) helpers.logger.debug(`brain page ${page.slug} revision ${page.revision} from task ${taskId}`);
  };
}

/** Test-key tasks never reach a model (as their replies), so they get the extractive page too. */
async function pageText(
  ctx: WorkerContext,
  live: boolean,
  title: string,
  messages: SourceMessage[],
): Promise<PageText> {
  if (!live || routesOnlyLocal(ctx.config.providers, 'text')) return extractiveSummary(title, messages);
  const generation = await ctx.providers(true).chat.chat({
    messages: summaryMessages(title, messages),
    maxTokens: 600,
    signal: AbortSignal.timeout(routeTimeoutMs(ctx.config.providers, 'text')),
  });
  if (generation.finishReason === 'cancelled') throw new Error('the page summary was cut off');
  const body = generation.text.trim();
  if (!body) throw new Error('the model returned an empty page summary');
  return { title, body };
}
