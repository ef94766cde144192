import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Logger, run, type Runner, type TaskList } from 'graphile-worker';

import { makePool } from '../../../shared/db/pool.ts';
import { NotificationHub } from '../../../shared/realtime/pubsub.ts';
import type { WorkerContext } from '../../../worker/context.ts';
import { mainRunnerPreset } from '../../../worker/runnerPresets.ts';
import { makeWorkerContext } from '../../../worker/startWorker.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import { workerUtilsFor } from '../../helpers/workerContext.ts';

export { listenOnLoopback as listenApp } from '../../helpers/loopbackServer.ts';

export type StreamEvent = { event: string; id: string | undefined; data: unknown };

export type SseStream = {
  status: number;
  events: StreamEvent[];
  comments: string[];
  /** Resolves once an event matching `predicate` has arrived (rejects after `timeoutMs`). */
  waitFor(predicate: (e: StreamEvent) => boolean, timeoutMs?: number): Promise<StreamEvent>;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  close(): void;
};

/** Opens an SSE request with fetch and parses it with eventsource-parser as it arrives. */
export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: StreamEvent[] = [];
  const comments: string[] = [];
  const waiters: { predicate: (e: StreamEvent) => boolean; resolve: (e: StreamEvent) => void }[] = [];
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      const event = {
        event: message.event ?? 'message',
        id: message.id,
        data: JSON.parse(message.data) as unknown,
      };
      events.push(event);
      for (const waiter of [...waiters]) {
        if (waiter.predicate(event)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(event);
        }
      }
    },
    onComment(comment) {
      comments.push(comment);
    },
  });
  const ended = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) {
        parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    status: response.status,
    events,
    comments,
    ended,
    waitFor(predicate, timeoutMs = 10_000) {
      const existing = events.find(predicate);
      if (existing) return Promise.resolve(existing);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching SSE event within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          predicate,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
        });
      });
    },
    close: () => controller.abort(),
  };
}

/** Polls `check` until it returns a value other than undefined. */
export async function waitUntil<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** POST /tasks as `key`, answered 202: the new task's id. */
export async function createTask(
  t: TestContext,
  key: string,
  body: Record<string, unknown>,
): Promise<string> {
  const created = await postAs(t.http, key, '/tasks').send(body).expect(202);
  return created.body.task.id as string;
}

export type StandaloneWorker = { ctx: WorkerContext; runner: Runner; stop(): Promise<void> };

/**
 * A worker as a separate process would run it: its own database pool, its own LISTEN connection and
 * a real graphile-worker runner, with a chosen task list (to inject a provider or a retry policy).
 */
export async function startStandaloneWorker(
  t: TestContext,
  tasks: (ctx: WorkerContext) => TaskList,
  config = t.config,
): Promise<StandaloneWorker> {
  const pool = await makePool(t.databaseUrl, { maxPoolSize: 4, name: 'test-worker' });
  const hub = new NotificationHub(t.databaseUrl, t.deps.logger);
  await hub.start();
  const ctx: WorkerContext = makeWorkerContext(config, {
    pool,
    hub,
    logger: t.deps.logger,
    objectStore: t.deps.objectStore,
    workerUtils: workerUtilsFor(t.databaseUrl),
  });
  const runner = await run({
    connectionString: t.databaseUrl,
    taskList: tasks(ctx),
    concurrency: 2,
    noHandleSignals: true,
    pollInterval: 100,
    // As the worker runs it: a stop writes what the last jobs ended with before the pool ends.
    preset: { worker: mainRunnerPreset(2) },
    logger: new Logger(() => () => {}),
  });
  return {
    ctx,
    runner,
    stop: async () => {
      await runner.stop();
      await ctx.close();
      await hub.stop();
      await pool.end();
    },
  };
}
