import type { Request, Response } from 'express';

import { findWorkspaceTask } from '../../shared/db/queries/tasks.ts';
import { releaseWhenClosed } from '../sse/releaseWhenClosed.ts';
import type { ReplySubscriber } from '../sse/taskReplyFeed.ts';
import { defaultTaskStreamOptions, taskStreamLifetimeMs } from '../sse/taskStream.ts';
import { rpcCodes, RpcFailure, type RpcId } from './jsonRpc.ts';
import { listenScopes, type MethodContext, requireScopes } from './methodContext.ts';
import { parseResourceUri, resourceUri } from './resourceUris.ts';

const subscriptionIdKey = 'io.modelcontextprotocol/subscriptionId';
// One stream follows at most this many tasks.
const maxSubscriptions = 100;

const event = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/** The task URIs asked for that name tasks of the workspace, with each task's latest message number. */
async function honoured(ctx: MethodContext, params: Record<string, unknown>) {
  const asked = (params.notifications as { resourceSubscriptions?: unknown } | undefined)
    ?.resourceSubscriptions;
  if (asked !== undefined && (!Array.isArray(asked) || !asked.every((u) => typeof u === 'string'))) {
    throw new RpcFailure(
      rpcCodes.invalidParams,
      'notifications.resourceSubscriptions must be an array of URIs.',
    );
  }
  const uris = [...new Set((asked ?? []) as string[])];
  if (uris.length > maxSubscriptions) {
    throw new RpcFailure(rpcCodes.invalidParams, `A stream follows at most ${maxSubscriptions} resources.`);
  }
  const tasks: { uri: string; taskId: string; after: number }[] = [];
  for (const uri of uris) {
    const ref = parseResourceUri(uri);
    if (ref?.kind !== 'task') continue;
    const task = await findWorkspaceTask(ctx.deps.pool, ctx.principal.workspaceId, ref.taskId);
    if (task) tasks.push({ uri: resourceUri(ref), taskId: task.id, after: task.last_message_seq });
  }
  return tasks;
}

/**
 * subscriptions/listen (2026-07-28): the response is an event stream that acknowledges the task URIs
 * it honours (notifications/subscriptions/acknowledged), then sends notifications/resources/updated
 * for a task each time a reply to it commits, read from the task streams' feed (TaskReplyFeed: the
 * same LISTEN/NOTIFY path, no polling), and ends with the request's result (its subscription id)
 * after the task stream's hold, at drain, or at once when nothing asked for can be followed. It
 * holds one of the workspace's stream leases (STREAMS_PER_WORKSPACE) from before its headers.
 */
export async function serveListen(
  req: Request,
  res: Response,
  ctx: MethodContext,
  request: { id: RpcId; params: Record<string, unknown> },
): Promise<void> {
  requireScopes(ctx.principal, listenScopes);
  const tasks = await honoured(ctx, request.params);
  const { deps } = ctx;
  const options = { ...defaultTaskStreamOptions, ...deps.taskStream };
  const lease = await deps.streamLeases.acquire(ctx.principal.workspaceId, taskStreamLifetimeMs(options));
  releaseWhenClosed(res, lease);
  if (res.destroyed) return;
  const meta = { [subscriptionIdKey]: request.id };
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  deps.openStreams.track('mcp', res);
  req.socket.setNoDelay(true);
  const notifications = tasks.length > 0 ? { resourceSubscriptions: tasks.map((t) => t.uri) } : {};
  res.write(
    event({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: meta, notifications },
    }),
  );
  followTasks(res, ctx, tasks, request.id, meta, options);
}

function followTasks(
  res: Response,
  ctx: MethodContext,
  tasks: { uri: string; taskId: string; after: number }[],
  id: RpcId,
  meta: Record<string, unknown>,
  options: typeof defaultTaskStreamOptions,
): void {
  const { taskReplyFeed: feed, shutdown } = ctx.deps;
  let closed = false;
  const unsubscribes: (() => void)[] = [];
  const paused = new Set<{ taskId: string; subscriber: ReplySubscriber }>();
  const send = (chunk: string, entry?: { taskId: string; subscriber: ReplySubscriber }) => {
    if (res.write(chunk) || !entry) return;
    // A reader that does not keep up: the feed passes this task over until the socket drains.
    entry.subscriber.paused = true;
    paused.add(entry);
  };
  res.on('drain', () => {
    for (const entry of paused) if (!closed) feed.resume(entry.taskId, entry.subscriber);
    paused.clear();
  });
  for (const task of tasks) {
    const entry = {
      taskId: task.taskId,
      subscriber: { after: task.after, paused: false } as ReplySubscriber,
    };
    entry.subscriber.deliver = (replies) => {
      if (closed || entry.subscriber.paused) return;
      // One notification for however many replies arrived together: it says "read it again".
      entry.subscriber.after = replies.at(-1)!.row.seq;
      const params = { uri: task.uri, _meta: meta };
      send(event({ jsonrpc: '2.0', method: 'notifications/resources/updated', params }), entry);
    };
    unsubscribes.push(feed.subscribe(task.taskId, entry.subscriber));
  }
  const heartbeat = setInterval(() => send(': keep-alive\n\n'), options.heartbeatMs);
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    clearTimeout(hold);
    for (const unsubscribe of unsubscribes) unsubscribe();
    shutdown.removeEventListener('abort', finish);
    if (res.writableEnded || res.destroyed) return;
    const result = { resultType: 'complete', _meta: meta };
    res.locals.responseBody = { jsonrpc: '2.0', id, result };
    res.end(event(res.locals.responseBody));
    const cut = setTimeout(() => res.destroy(), options.stallMs);
    res.once('close', () => clearTimeout(cut));
  };
  // Nothing to follow: acknowledged with nothing honoured, and closed rather than left dangling.
  const hold = setTimeout(finish, tasks.length === 0 ? 0 : options.holdMs);
  res.on('close', finish);
  if (shutdown.aborted) finish();
  else shutdown.addEventListener('abort', finish, { once: true });
}
