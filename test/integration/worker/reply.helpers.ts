import { fixtureProviders } from '../../../shared/providers/fixtures.ts';
import type { ChatProvider, TextGeneration, TokenUsage } from '../../../shared/providers/types.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { taskReply } from '../../../worker/tasks/task__reply.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTask, type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';

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

/** A test context with a reply worker (see startReplyWorker); `close` stops the worker, then the context. */
export async function replyContext(
  liveModel: ChatProvider,
  maxOutputTokens: number,
): Promise<{ t: TestContext; close(): Promise<void> }> {
  const t = await setupTestContext();
  const worker = await startReplyWorker(t, liveModel, maxOutputTokens);
  return {
    t,
    close: async () => {
      await worker.stop();
      await t.close();
    },
  };
}

export type Msg = { id: string; role: string; text: string };

/** A task created with "First." and sent "Second." straight after, as `key`: its id. */
export async function postFirstThenSecond(t: TestContext, key: string): Promise<string> {
  const taskId = await createTask(t, key, { input: 'First.' });
  await postAs(t.http, key, `/tasks/${taskId}/messages`).send({ input: 'Second.' }).expect(202);
  return taskId;
}

/** The task's messages, polled until there are at least `count`. */
export function messagesOnceThere(
  t: TestContext,
  key: string,
  taskId: string,
  count: number,
  timeoutMs: number,
): Promise<Msg[]> {
  return waitUntil(async () => {
    const res = await t.http
      .get(api(`/tasks/${taskId}/messages`))
      .set(bearer(key))
      .expect(200);
    return res.body.data.length >= count ? (res.body.data as Msg[]) : undefined;
  }, timeoutMs);
}
