import type { Principal } from '../../shared/auth/principal.ts';
import { scopeAllows } from '../../shared/auth/principal.ts';
import type { ApiDocument, Operation } from '../openapi/document.ts';
import { icons } from './icons.ts';
import { toolCatalogue, type ToolEntry } from './toolCatalogue.ts';
import { inputSchemaOf, outputSchemaOf } from './toolSchemas.ts';

export type Tool = ToolEntry & {
  op: Operation;
  /** The REST path's template parameters, in order. */
  pathParams: string[];
  /** As tools/list shows it. */
  definition: Record<string, unknown>;
};

const built = new WeakMap<ApiDocument, Map<string, Tool>>();

function outputSchema(doc: ApiDocument, op: Operation, pick: string | undefined): Record<string, unknown> {
  const schema = outputSchemaOf(doc, op);
  if (!pick) return schema;
  const part = (schema.properties as Record<string, unknown>)[pick];
  return { type: 'object', properties: { [pick]: part }, required: [pick] };
}

/** The tools, their schemas derived once per document (the schemas are the REST operations'). */
export function toolsOf(doc: ApiDocument): Map<string, Tool> {
  let tools = built.get(doc);
  if (tools) return tools;
  tools = new Map();
  for (const entry of toolCatalogue) {
    const op = doc.operations.find((o) => o.id === entry.operationId);
    if (!op) throw new Error(`MCP tool ${entry.name}: no operation ${entry.operationId} in openapi.yaml`);
    const definition = {
      name: entry.name,
      title: entry.title,
      icons: icons[entry.icon],
      description: op.scope ? `${entry.description} Needs scope ${op.scope}.` : entry.description,
      inputSchema: inputSchemaOf(doc, op),
      outputSchema: outputSchema(doc, op, entry.pick),
      annotations: {
        title: entry.title,
        readOnlyHint: entry.readOnly,
        destructiveHint: false,
        idempotentHint: entry.readOnly,
        openWorldHint: false,
      },
    };
    const pathParams = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    tools.set(entry.name, { ...entry, op, definition, pathParams });
  }
  built.set(doc, tools);
  return tools;
}

/** The credential may call the tool: its scope covers the REST operation's (none = any credential). */
export function mayCall(principal: Principal, tool: Tool): boolean {
  return tool.op.scope === undefined || scopeAllows(principal.scope, tool.op.scope);
}
