import type { ApiDocument, Operation } from '../openapi/document.ts';

type Json = Record<string, unknown>;

// Keys of our OpenAPI dialect that mean nothing to a JSON Schema consumer (an MCP client or model).
const dropped = new Set(['x-svc-error-code', 'example', 'examples', 'xml', 'discriminator']);

/** A schema of the document with every $ref inlined, so a tool's schema stands alone. */
export function inline(root: Json, node: unknown, depth = 0): unknown {
  if (depth > 32) throw new Error('openapi.yaml: schema nests too deep to inline');
  if (Array.isArray(node)) return node.map((n) => inline(root, n, depth + 1));
  if (typeof node !== 'object' || node === null) return node;
  let current = node as Json;
  while (typeof current.$ref === 'string') {
    const parts = current.$ref.replace(/^#\//, '').split('/');
    current = parts.reduce<Json>((acc, key) => acc[key] as Json, root);
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(current)) {
    if (!dropped.has(key)) out[key] = inline(root, value, depth + 1);
  }
  return out;
}

function rawOperation(doc: ApiDocument, op: Operation): Json {
  const paths = doc.raw.paths as Record<string, Record<string, Json>>;
  return paths[op.path]![op.method.toLowerCase()]!;
}

/**
 * A tool's input schema: the REST operation's path and query parameters beside its JSON body's
 * properties, read from openapi.yaml so the tool and the route cannot drift apart.
 */
export function inputSchemaOf(doc: ApiDocument, op: Operation): Json {
  const raw = rawOperation(doc, op);
  const properties: Json = {};
  const required: string[] = [];
  for (const param of (raw.parameters ?? []) as Json[]) {
    const p = inline(doc.raw, param) as Json;
    if (p.in !== 'path' && p.in !== 'query') continue;
    const schema = { ...(p.schema as Json) };
    if (typeof p.description === 'string') schema.description = p.description;
    properties[String(p.name)] = schema;
    if (p.in === 'path' || p.required === true) required.push(String(p.name));
  }
  const body = inline(doc.raw, (raw.requestBody as Json | undefined)?.content) as Json | undefined;
  const bodySchema = (body?.['application/json'] as Json | undefined)?.schema as Json | undefined;
  Object.assign(properties, bodySchema?.properties ?? {});
  required.push(...((bodySchema?.required ?? []) as string[]));
  return { type: 'object', properties, required, additionalProperties: false };
}

/** The schema of the operation's success body (its first 2xx JSON response). */
export function outputSchemaOf(doc: ApiDocument, op: Operation): Json {
  const raw = rawOperation(doc, op);
  const responses = raw.responses as Record<string, Json>;
  const status = Object.keys(responses).find((s) => s.startsWith('2'))!;
  const response = inline(doc.raw, responses[status]) as Json;
  return ((response.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json;
}
