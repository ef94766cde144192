import { findVisibleBrainPage } from '../../shared/db/queries/brainPages.ts';
import { listTaskMessages } from '../../shared/db/queries/taskMessages.ts';
import { findWorkspaceTask } from '../../shared/db/queries/tasks.ts';
import { found } from '../../shared/errors/appError.ts';
import { toTaskDto } from '../../shared/tasks/dto.ts';
import { readFileResource } from './fileResource.ts';
import { mcpCodes, rpcCodes, RpcFailure } from './jsonRpc.ts';
import { notFoundAsRpc } from './methodCall.ts';
import { type MethodContext, requireScopes, resourceScopes } from './methodContext.ts';
import { parseResourceUri } from './resourceUris.ts';

// A transcript carries at most this many messages (the first ones); the state says how many there are.
const maxTranscriptMessages = 1000;

async function readTask(ctx: MethodContext, taskId: string, uri: string) {
  const { pool } = ctx.deps;
  const task = found(await findWorkspaceTask(pool, ctx.principal.workspaceId, taskId), 'task', taskId);
  const messages = await listTaskMessages(pool, task.id, 0, maxTranscriptMessages);
  const lines = [`# ${task.title}`, ''];
  for (const m of messages) {
    const failed = m.status === 'failed' ? ` (failed: ${m.error_code})` : '';
    lines.push(`## ${m.role} · ${m.created_at}${failed}`, '', m.text, '');
  }
  if (task.last_message_seq > messages.length) {
    lines.push(`… ${task.last_message_seq - messages.length} later messages: use list_task_messages.`);
  }
  const last = messages.at(-1);
  const state = {
    task: toTaskDto(task),
    messageCount: task.last_message_seq,
    lastMessage: last ? { role: last.role, status: last.status, createdAt: last.created_at } : null,
    // A reply is owed while the newest message is the person's.
    awaitingReply: last?.role === 'user',
  };
  return [
    { uri, mimeType: 'text/markdown', text: lines.join('\n').trimEnd() },
    { uri, mimeType: 'application/json', text: JSON.stringify(state) },
  ];
}

/**
 * resources/read: the thing the URI names, where the credential's scope covers its kind and the
 * member may see it; a URI that names nothing readable is -32002 with the URI (the same answer for
 * a colleague's private page as for no page, as REST answers not_found for both).
 */
export async function readResource(ctx: MethodContext, params: Record<string, unknown>) {
  if (typeof params.uri !== 'string') {
    throw new RpcFailure(rpcCodes.invalidParams, 'params.uri must be a string.');
  }
  const uri = params.uri;
  const ref = parseResourceUri(uri);
  if (!ref) throw new RpcFailure(mcpCodes.resourceNotFound, `Resource not found: ${uri}`, { uri });
  requireScopes(ctx.principal, resourceScopes[ref.kind]);
  const { workspaceId, memberId } = ctx.principal;
  const read = async () => {
    switch (ref.kind) {
      case 'page': {
        const page = found(
          await findVisibleBrainPage(ctx.deps.pool, { workspaceId, memberId }, ref.slug),
          'page',
          ref.slug,
        );
        return [{ uri, mimeType: 'text/markdown', text: `# ${page.title}\n\n${page.body}` }];
      }
      case 'file':
        return readFileResource(ctx.deps, workspaceId, ref.fileId, uri);
      case 'task':
        return readTask(ctx, ref.taskId, uri);
      default: {
        const never: never = ref;
        throw new Error(`unknown resource ${String(never)}`);
      }
    }
  };
  return { contents: await read().catch(notFoundAsRpc(uri)) };
}
