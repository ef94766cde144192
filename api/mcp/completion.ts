import { completeVisibleBrainSlugs } from '../../shared/db/queries/brainPages.ts';
import { completeWorkspaceFiles } from '../../shared/db/queries/files.ts';
import { completeWorkspaceTasks } from '../../shared/db/queries/tasks.ts';
import { findWorkspaceWorkflow, listPreviousWorkflowValues } from '../../shared/db/queries/workflows.ts';
import { parseFieldDefinitions } from '../../shared/workflows/fields.ts';
import { rpcCodes, RpcFailure } from './jsonRpc.ts';
import { allows, type MethodContext, promptScopes, requireScopes, resourceScopes } from './methodContext.ts';
import { templateVariables } from './resourceUris.ts';

// The spec's cap on values in one completion.
const maxValues = 100;

const invalid = (message: string) => new RpcFailure(rpcCodes.invalidParams, message);

function result(values: readonly string[]) {
  const shown = values.slice(0, maxValues);
  return { completion: { values: shown, hasMore: values.length > maxValues } };
}

async function completeWorkflowArgument(ctx: MethodContext, name: unknown, argument: string, prefix: string) {
  requireScopes(ctx.principal, promptScopes);
  const { pool } = ctx.deps;
  const { workspaceId } = ctx.principal;
  const workflow = typeof name === 'string' ? await findWorkspaceWorkflow(pool, workspaceId, name) : null;
  if (!workflow) throw invalid(`Unknown prompt: ${String(name)}.`);
  const field = parseFieldDefinitions(workflow.fields).find((f) => f.key === argument);
  if (!field) throw invalid(`The prompt ${workflow.id} has no argument ${argument}.`);
  const starts = (v: string) => v.toLowerCase().startsWith(prefix.toLowerCase());
  switch (field.type) {
    case 'select':
      return result(field.options.filter(starts));
    case 'boolean':
      return result(['true', 'false'].filter(starts));
    case 'file':
      // File ids only to a credential that may read files (filtered, as any completion).
      if (!allows(ctx.principal, ['files.read'])) return result([]);
      return result(
        (await completeWorkspaceFiles(pool, workspaceId, prefix, maxValues + 1)).map((f) => f.id),
      );
    default:
      return result(
        await listPreviousWorkflowValues(pool, {
          workspaceId,
          workflowId: workflow.id,
          key: field.key,
          prefix,
          limit: maxValues + 1,
        }),
      );
  }
}

async function completeTemplateVariable(ctx: MethodContext, uri: unknown, argument: string, prefix: string) {
  const template = typeof uri === 'string' ? templateVariables[uri] : undefined;
  if (!template) throw invalid(`Unknown resource template: ${String(uri)}.`);
  if (template.variable !== argument) {
    throw invalid(`The template ${String(uri)} has no variable ${argument}.`);
  }
  requireScopes(ctx.principal, resourceScopes[template.kind]);
  const { pool } = ctx.deps;
  const { workspaceId, memberId } = ctx.principal;
  const limit = maxValues + 1;
  switch (template.kind) {
    case 'page':
      return result(await completeVisibleBrainSlugs(pool, { workspaceId, memberId }, prefix, limit));
    case 'file':
      return result((await completeWorkspaceFiles(pool, workspaceId, prefix, limit)).map((f) => f.id));
    case 'task':
      return result((await completeWorkspaceTasks(pool, workspaceId, prefix, limit)).map((t) => t.id));
    default: {
      const never: never = template.kind;
      throw new Error(`unknown template ${String(never)}`);
    }
  }
}

/**
 * completion/complete: a workflow argument (select options, true/false, file ids, values earlier
 * runs gave) or a resource template variable (page slugs, file ids by id or name, task ids by id or
 * title), filtered by what the caller may see, at most 100 values.
 */
export async function complete(ctx: MethodContext, params: Record<string, unknown>) {
  const ref = params.ref as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
  const argument = params.argument as { name?: unknown; value?: unknown } | undefined;
  if (typeof argument?.name !== 'string' || typeof argument.value !== 'string') {
    throw invalid('params.argument must be { name, value } strings.');
  }
  if (ref?.type === 'ref/prompt') {
    return completeWorkflowArgument(ctx, ref.name, argument.name, argument.value);
  }
  if (ref?.type === 'ref/resource') {
    return completeTemplateVariable(ctx, ref.uri, argument.name, argument.value);
  }
  throw invalid('params.ref.type must be ref/prompt or ref/resource.');
}
