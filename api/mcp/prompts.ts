import {
  findWorkspaceWorkflow,
  listWorkspaceWorkflows,
  type WorkflowRow,
} from '../../shared/db/queries/workflows.ts';
import { type FieldDefinition, parseFieldDefinitions } from '../../shared/workflows/fields.ts';
import { prepareWorkflowRun } from '../../shared/workflows/prepareRun.ts';
import { icons } from './icons.ts';
import { rpcCodes, RpcFailure } from './jsonRpc.ts';
import { type MethodContext, promptScopes, requireScopes } from './methodContext.ts';

function describeField(field: FieldDefinition): string {
  const kind =
    field.type === 'select'
      ? `one of: ${field.options.join(', ')}`
      : field.type === 'boolean'
        ? 'true or false'
        : field.type === 'date'
          ? 'a date as YYYY-MM-DD'
          : field.type === 'file'
            ? 'a file id'
            : field.type === 'number'
              ? field.integer
                ? 'a whole number'
                : 'a number'
              : 'text';
  return field.description ? `${field.description} (${kind})` : `${field.label ?? field.key} (${kind})`;
}

/** A workflow's fields, or none when its stored definitions are unreadable (it is then not offered). */
function fieldsOf(workflow: WorkflowRow): FieldDefinition[] | undefined {
  try {
    return parseFieldDefinitions(workflow.fields);
  } catch {
    return undefined;
  }
}

/** prompts/list: every workflow of the workspace as a prompt named by its id; its fields are the arguments. */
export async function listPrompts(ctx: MethodContext) {
  requireScopes(ctx.principal, promptScopes);
  const workflows = await listWorkspaceWorkflows(ctx.deps.pool, ctx.principal.workspaceId);
  const prompts = workflows.flatMap((workflow) => {
    const fields = fieldsOf(workflow);
    if (!fields) return [];
    return [
      {
        name: workflow.id,
        title: workflow.name,
        description: `The workflow “${workflow.name}” as a prompt; run it with run_workflow (workflowId ${workflow.id}).`,
        arguments: fields.map((f) => ({
          name: f.key,
          title: f.label ?? f.key,
          description: describeField(f),
          required: f.required,
        })),
        icons: icons.workflow,
      },
    ];
  });
  return { prompts };
}

/**
 * MCP prompt arguments are strings; run_workflow takes JSON values. A string that is exactly the
 * JSON a number or boolean field takes becomes that value, anything else stays the string, so the
 * checks then answer exactly what run_workflow answers for the same JSON.
 */
export function coerceArguments(fields: FieldDefinition[], args: Record<string, unknown>) {
  const byKey = new Map(fields.map((f) => [f.key, f]));
  const values: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    const type = byKey.get(key)?.type;
    if (typeof value === 'string' && type === 'number' && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value)) {
      values[key] = Number(value);
    } else if (typeof value === 'string' && type === 'boolean' && (value === 'true' || value === 'false')) {
      values[key] = value === 'true';
    } else {
      values[key] = value;
    }
  }
  return values;
}

/**
 * prompts/get: the workflow's template filled with the arguments, after the checks run_workflow
 * makes (prepareWorkflowRun, file ids included): bad values answer -32602 with the same issues.
 * Nothing is created; running it is run_workflow's.
 */
export async function getPrompt(ctx: MethodContext, params: Record<string, unknown>) {
  requireScopes(ctx.principal, promptScopes);
  const name = params.name;
  const args = params.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new RpcFailure(rpcCodes.invalidParams, 'params.arguments must be an object.');
  }
  const workflow =
    typeof name === 'string'
      ? await findWorkspaceWorkflow(ctx.deps.pool, ctx.principal.workspaceId, name)
      : null;
  const fields = workflow ? fieldsOf(workflow) : undefined;
  if (!workflow || !fields) {
    throw new RpcFailure(
      rpcCodes.invalidParams,
      `Unknown prompt: ${String(name)}. Call prompts/list for the prompts.`,
    );
  }
  const values = coerceArguments(fields, args as Record<string, unknown>);
  const run = await prepareWorkflowRun(ctx.deps.pool, ctx.principal.workspaceId, workflow, values);
  return {
    description: workflow.name,
    messages: [{ role: 'user', content: { type: 'text', text: run.text } }],
  };
}
