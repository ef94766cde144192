import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import YAML from 'yaml';

import { type ErrorCode, isErrorCode } from '../../shared/errors/codes.ts';

/** One HTTP operation of the public API, as the OpenAPI document declares it. */
export type Operation = {
  id: string;
  method: string;
  /** Path relative to the API base, OpenAPI template form: /tasks/{taskId}. */
  path: string;
  matcher: RegExp;
  packageId: string;
  title: string;
  description: string;
  /** Capability the key's scope must cover; undefined for operations any key may call. */
  scope: string | undefined;
  billed: boolean;
  idempotent: boolean;
  sensitive: boolean;
  authenticated: boolean;
  validateBody: boolean;
  /** Has parameters or a body: there is request input to validate. */
  hasInput: boolean;
  /** Declares a JSON request body, read (after authentication) up to `maxBodyBytes`. */
  hasJsonBody: boolean;
  /** The largest body it reads, decompressed: `x-svc-max-body-bytes`, else defaultMaxBodyBytes. */
  maxBodyBytes: number;
  errorCodes: ErrorCode[];
  /** Spec-specific error codes that win over invalid_request_body, keyed by `body.<field>`, `query.<name>`, `headers.<name>`. */
  fieldErrorCodes: Map<string, ErrorCode>;
};

export type Package = { id: string; title: string; description: string };

export type ApiDocument = {
  /** The parsed document, exactly as written in openapi.yaml. */
  raw: Record<string, unknown>;
  operations: Operation[];
  packages: Package[];
  /** Every scoped capability id (the API's operation scopes and OAuth scopes). */
  scopes: string[];
};

/** What an operation reads of a body when its document entry says nothing (x-svc-max-body-bytes). */
export const defaultMaxBodyBytes = 64 * 1024;

const yamlPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'openapi.yaml');
const httpMethods = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Json = Record<string, unknown>;

function resolveRef(root: Json, node: unknown): Json {
  let current = node as Json;
  while (current && typeof current.$ref === 'string') {
    const parts = (current.$ref as string).replace(/^#\//, '').split('/');
    current = parts.reduce<Json>((acc, key) => acc[key] as Json, root);
  }
  return current;
}

function fieldErrorCodes(root: Json, op: Json): Map<string, ErrorCode> {
  const codes = new Map<string, ErrorCode>();
  const body = resolveRef(root, op.requestBody);
  const content = (body?.content ?? {}) as Record<string, Json>;
  for (const media of Object.values(content)) {
    const schema = resolveRef(root, media.schema);
    for (const [name, prop] of Object.entries((schema?.properties ?? {}) as Record<string, Json>)) {
      const resolved = resolveRef(root, prop);
      const code = resolved['x-svc-error-code'] ?? resolveRef(root, resolved.items)?.['x-svc-error-code'];
      if (isErrorCode(code)) codes.set(`body.${name}`, code);
    }
  }
  for (const param of (op.parameters ?? []) as Json[]) {
    const p = resolveRef(root, param);
    const code = resolveRef(root, p.schema)?.['x-svc-error-code'];
    if (isErrorCode(code)) {
      codes.set(`${p.in === 'header' ? 'headers' : p.in}.${String(p.name).toLowerCase()}`, code);
    }
  }
  return codes;
}

function hasJsonBody(root: Json, op: Json): boolean {
  const content = (resolveRef(root, op.requestBody)?.content ?? {}) as Record<string, unknown>;
  return Object.hasOwn(content, 'application/json');
}

function toMatcher(template: string): RegExp {
  const escaped = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${escaped}/?$`);
}

/**
 * Reads openapi.yaml and derives everything else that depends on it: the operation table used for
 * routing, scopes and error mapping, and the catalogue's packages.
 * @throws when the document is unreadable or an operation lacks its x-svc-error-codes.
 */
export function loadApiDocument(): ApiDocument {
  const raw = YAML.parse(readFileSync(yamlPath, 'utf8')) as Json;
  const globalSecurity = (raw.security ?? []) as unknown[];
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(raw.paths as Record<string, Json>)) {
    for (const method of httpMethods) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const rawCodes = op['x-svc-error-codes'];
      if (!Array.isArray(rawCodes) || !rawCodes.every(isErrorCode)) {
        throw new Error(`openapi.yaml: ${method} ${template} needs x-svc-error-codes of known codes`);
      }
      const security = (op.security ?? globalSecurity) as unknown[];
      operations.push({
        id: String(op.operationId),
        method: method.toUpperCase(),
        path: template,
        matcher: toMatcher(template),
        packageId: String((op.tags as string[])[0]),
        title: String(op.summary ?? ''),
        description: String(op.description ?? '').trim(),
        scope: typeof op['x-svc-scope'] === 'string' ? op['x-svc-scope'] : undefined,
        billed: op['x-svc-billed'] === true,
        idempotent: op['x-svc-idempotent'] === true,
        sensitive: op['x-svc-sensitive'] === true,
        authenticated: security.length > 0,
        validateBody: op['x-svc-validate-body'] !== false,
        hasInput: op.requestBody !== undefined || (Array.isArray(op.parameters) && op.parameters.length > 0),
        hasJsonBody: hasJsonBody(raw, op),
        maxBodyBytes:
          typeof op['x-svc-max-body-bytes'] === 'number' ? op['x-svc-max-body-bytes'] : defaultMaxBodyBytes,
        errorCodes: rawCodes,
        fieldErrorCodes: fieldErrorCodes(raw, op),
      });
    }
  }
  const packages = ((raw.tags ?? []) as Json[])
    .filter((t) => t.name !== 'platform')
    .map((t) => ({
      id: String(t.name),
      title: String(t['x-svc-title'] ?? t.name),
      description: String(t.description ?? ''),
    }));
  const scopes = operations.flatMap((o) => (o.scope ? [o.scope] : []));
  return { raw, operations, packages, scopes };
}

/** The authentication errors every authenticated operation can answer with (spec "Endpoints"). */
export const authErrorCodes: ErrorCode[] = [
  'invalid_api_key',
  'api_key_revoked',
  'api_key_expired',
  'api_key_ip_not_allowed',
  'developer_access_revoked',
  'api_key_project_scope',
  'api_key_operation_scope',
  'rate_limited',
];

/**
 * The document as served at GET /openapi.json: absolute server URL, and each operation's
 * x-svc-error-codes completed with the authentication errors it can answer with.
 */
export function publicDocument(doc: ApiDocument, baseUrl: string): Json {
  const served = structuredClone(doc.raw);
  served.servers = [{ url: baseUrl }];
  for (const op of doc.operations) {
    const node = (served.paths as Record<string, Json>)[op.path]![op.method.toLowerCase()] as Json;
    const extra = op.authenticated ? authErrorCodes : [];
    node['x-svc-error-codes'] = [...new Set([...extra, ...op.errorCodes, 'internal_error'])];
    if (op.scope === undefined) delete node['x-svc-scope'];
  }
  return served;
}

/** Finds the operation for a method and a path below the API base; `methods` lists the path's verbs when only the method is wrong. */
export function matchOperation(
  doc: ApiDocument,
  method: string,
  path: string,
): { operation: Operation; params: string[] } | { operation: undefined; methods: string[] } {
  const methods: string[] = [];
  for (const operation of doc.operations) {
    const m = operation.matcher.exec(path);
    if (!m) continue;
    if (operation.method === method || (method === 'HEAD' && operation.method === 'GET')) {
      return { operation, params: m.slice(1) };
    }
    methods.push(operation.method);
  }
  return { operation: undefined, methods };
}
