import { fixtureProviders } from '../../../shared/providers/fixtures.ts';
import type { ChatProvider, TextGeneration, TokenUsage } from '../../../shared/providers/types.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { taskReply } from '../../../worker/tasks/task__reply.ts';
import type { TestContext } from '../../helpers/context.ts';
import { type StandaloneWorker, startStandaloneWorker } from '../api/tasks.helpers.ts';

/** A finished answer of the in-process live model: `text`, billed as `usage`. */
export const liveGeneration = (text: string, usage: TokenUsage): TextGeneration => ({
  text,
  model: 'live-test-model',
  usage,
  finishReason: 'stop',
});

/** A standalone worker whose task replies use `liveModel` for live keys and the fixtures for test keys. */
export function startReplyWorker(
  t: TestContext,
  liveModel: ChatProvider,
  maxOutputTokens: number,
): Promise<StandaloneWorker> {
  return startStandaloneWorker(t, (ctx) => ({
    task__reply: jobTask(
      ctx,
      taskReply(ctx, {
        chatProvider: (live) => (live ? liveModel : fixtureProviders.chat),
        maxOutputTokens,
      }),
    ),
  }));
}
