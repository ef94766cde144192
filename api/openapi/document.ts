import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CORE_SCHEMA, load } from 'js-yaml';

import { apiBasePath } from '../../shared/config/config.ts';
import { type ErrorCode, errorStatus, isErrorCode } from '../../shared/errors/codes.ts';

/** One HTTP operation of the public API, as the OpenAPI document declares it. */
export type Operation = {
  id: string;
  method: string;
  /** Path relative to its base, OpenAPI template form: /tasks/{taskId}. */
  path: string;
  /**
   * Where it is mounted: the API base, or a compatible API's (`x-svc-base` on its path item, as
   * `/api/openai/v1`), whose operations answer in that API's shapes (api/compat/).
   */
  base: string;
  /** Its key under `paths` in the document (the base and path for a compatible API's operation). */
  documentPath: string;
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
  /** Every code the operation can answer: those derived from the document's facts and its own x-svc-error-codes. */
  errorCodes: ErrorCode[];
  /** Integer and number parameters, whose raw values must be canonical decimals (requestValidation.ts). */
  numericParameters: NumericParameter[];
  /** Spec-specific error codes that win over invalid_request_body, keyed by `body.<field>`, `query.<name>`, `headers.<name>`. */
  fieldErrorCodes: Map<string, ErrorCode>;
};

export type NumericParameter = {
  in: 'query' | 'path' | 'header';
  name: string;
  integer: boolean;
  /** For a path parameter: its position among the template's parameters (the matcher's groups). */
  position: number;
};

export type Package = { id: string; title: string; description: string };

export type ApiDocument = {
  /** The parsed document, exactly as written in openapi.yaml. */
  raw: Record<string, unknown>;
  /**
   * openapi.yaml completed with what follows from it: each operation's full x-svc-error-codes and one
   * error response per status. The server validates with it and serves it (publicDocument).
   */
  contract: Record<string, unknown>;
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

function numericParameters(root: Json, template: string, parameters: Json[]): NumericParameter[] {
  const pathNames = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  return parameters.flatMap((param) => {
    const p = resolveRef(root, param);
    const schema = resolveRef(root, p.schema) ?? {};
    const types = ([] as unknown[]).concat(schema.type ?? []);
    const where = p.in;
    if (where !== 'query' && where !== 'path' && where !== 'header') return [];
    if (!types.includes('integer') && !types.includes('number')) return [];
    const name = String(p.name);
    return [{ in: where, name, integer: !types.includes('number'), position: pathNames.indexOf(name) }];
  });
}

function toMatcher(template: string): RegExp {
  const escaped = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${escaped}/?$`);
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
];

/** What an Idempotency-Key can answer with on the operations that honour it (x-svc-idempotent). */
export const idempotencyErrorCodes: ErrorCode[] = [
  'invalid_idempotency_key',
  'idempotency_key_reused',
  'idempotency_request_in_progress',
];

/**
 * The codes an operation answers with because of what the document already says about it, so no
 * operation restates them by hand: the auth errors and the per-workspace rate limit where a key is
 * needed (the rate limit counts per key's workspace), the Idempotency-Key codes where it is honoured,
 * invalid_request_body everywhere (every operation checks what it is sent: query parameters it does
 * not declare, values its schema refuses, text PostgreSQL cannot store, a body that is not JSON or
 * is larger than its x-svc-max-body-bytes), method_not_allowed on every path (another method of the
 * same path), internal_error and service_unavailable (a database or storage outage, with
 * Retry-After). file_too_large is an operation's own code where it takes files.
 */
export function derivedErrorCodes(op: { authenticated: boolean; idempotent: boolean }): ErrorCode[] {
  return [
    ...(op.authenticated ? [...authErrorCodes, 'rate_limited' as const] : []),
    ...(op.idempotent ? idempotencyErrorCodes : []),
    'invalid_request_body',
    'method_not_allowed',
    'internal_error',
    'service_unavailable',
  ];
}

const codeOrder = Object.keys(errorStatus) as ErrorCode[];

/** In the order of the spec's error table, without repeats. */
function ordered(codes: Iterable<ErrorCode>): ErrorCode[] {
  const set = new Set(codes);
  return codeOrder.filter((code) => set.has(code));
}

const retryAfter: Json = {
  'Retry-After': {
    description: 'Seconds to wait before the next request.',
    schema: { type: 'integer', minimum: 1 },
  },
};

const errorHeaders: Partial<Record<number, Json>> = {
  405: { Allow: { description: 'The methods this path supports.', schema: { type: 'string' } } },
  409: {
    'Retry-After': {
      description:
        'With idempotency_request_in_progress: seconds until the first request with the key has let it go (a retry may then take its work over).',
      schema: { type: 'integer', minimum: 1 },
    },
  },
  429: retryAfter,
  503: retryAfter,
};

const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());

/** The error envelope with `code` narrowed to `codes` (all of one status). */
function errorResponse(status: number, codes: ErrorCode[]): Json {
  return {
    description: `${STATUS_CODES[status]}: error.code is ${codes.length === 1 ? '' : 'one of '}${codes.join(', ')}.`,
    ...(errorHeaders[status] ? { headers: errorHeaders[status] } : {}),
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message', 'requestId'],
              properties: {
                code: { type: 'string', enum: codes },
                message: { type: 'string' },
                requestId: { type: 'string' },
                issues: { type: 'array', items: { $ref: '#/components/schemas/ErrorIssue' } },
              },
            },
          },
        },
      },
    },
  };
}

/**
 * One response per error status, whose `error.code` is narrowed to the codes this operation answers
 * with at that status, so generated clients can type their errors. Operations share most of these
 * (every authenticated one has the same 401), so each distinct one is a component named after its
 * codes (`NotFound`, `InvalidApiKeyOrApiKeyRevokedOrApiKeyExpired`), added to `shared`.
 */
function errorResponses(codes: ErrorCode[], shared: Record<string, Json>): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    byStatus.set(errorStatus[code], [...(byStatus.get(errorStatus[code]) ?? []), code]);
  }
  const responses: Record<string, Json> = {};
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const statusCodes = byStatus.get(status)!;
    const name = statusCodes.map(pascal).join('Or');
    shared[name] ??= errorResponse(status, statusCodes);
    responses[String(status)] = { $ref: `#/components/responses/${name}` };
  }
  return responses;
}

/**
 * Builds the operation table, the catalogue and the completed contract from a parsed document.
 * @throws when an operation lacks x-svc-error-codes of known codes, or declares its own error
 * responses (they are derived from its codes).
 */
export function buildApiDocument(raw: Json): ApiDocument {
  const contract = structuredClone(raw);
  const components = (contract.components ??= {}) as Json;
  const sharedResponses = (components.responses ??= {}) as Record<string, Json>;
  const globalSecurity = (raw.security ?? []) as unknown[];
  const operations: Operation[] = [];
  for (const [documentPath, item] of Object.entries(raw.paths as Record<string, Json>)) {
    // A compatible API's path is keyed from the root (its own base first), so it cannot collide
    // with the API's own (both have /embeddings).
    const base = typeof item['x-svc-base'] === 'string' ? item['x-svc-base'] : apiBasePath;
    const compatible = base !== apiBasePath;
    if (compatible && !documentPath.startsWith(`${base}/`)) {
      throw new Error(`openapi.yaml: ${documentPath} must start with its x-svc-base ${base}`);
    }
    const template = compatible ? documentPath.slice(base.length) : documentPath;
    for (const method of httpMethods) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const where = `${method} ${documentPath}`;
      const ownCodes = op['x-svc-error-codes'];
      if (!Array.isArray(ownCodes) || !ownCodes.every(isErrorCode)) {
        throw new Error(`openapi.yaml: ${where} needs x-svc-error-codes of known codes`);
      }
      const responses = (op.responses ?? {}) as Json;
      // A compatible API's errors have that API's shape: its operation declares them itself.
      const declared = compatible ? [] : Object.keys(responses).filter((status) => !/^[123]/.test(status));
      if (declared.length > 0) {
        throw new Error(
          `openapi.yaml: ${where} declares ${declared.join(', ')}; error responses are derived`,
        );
      }
      const parameters = [...((item.parameters ?? []) as Json[]), ...((op.parameters ?? []) as Json[])];
      const security = (op.security ?? globalSecurity) as unknown[];
      const facts = {
        authenticated: security.length > 0,
        idempotent: op['x-svc-idempotent'] === true,
        hasBody: op.requestBody !== undefined,
      };
      const errorCodes = ordered([...derivedErrorCodes(facts), ...ownCodes]);
      const completed = (contract.paths as Record<string, Json>)[documentPath]![method] as Json;
      completed['x-svc-error-codes'] = errorCodes;
      if (!compatible) {
        completed.responses = {
          ...(completed.responses as Json),
          ...errorResponses(errorCodes, sharedResponses),
        };
      }
      operations.push({
        id: String(op.operationId),
        method: method.toUpperCase(),
        path: template,
        base,
        documentPath,
        matcher: toMatcher(template),
        packageId: String((op.tags as string[])[0]),
        title: String(op.summary ?? ''),
        description: String(op.description ?? '').trim(),
        scope: typeof op['x-svc-scope'] === 'string' ? op['x-svc-scope'] : undefined,
        billed: op['x-svc-billed'] === true,
        idempotent: facts.idempotent,
        sensitive: op['x-svc-sensitive'] === true,
        authenticated: facts.authenticated,
        validateBody: op['x-svc-validate-body'] !== false,
        hasInput: facts.hasBody || parameters.length > 0,
        hasJsonBody: hasJsonBody(raw, op),
        maxBodyBytes:
          typeof op['x-svc-max-body-bytes'] === 'number' ? op['x-svc-max-body-bytes'] : defaultMaxBodyBytes,
        errorCodes,
        numericParameters: numericParameters(raw, template, parameters),
        fieldErrorCodes: fieldErrorCodes(raw, op),
      });
    }
  }
  // The catalogue (GET /reference) lists the API's own packages: a compatible API's operations run
  // under the scopes of those (its tag says x-svc-compatible) and are not packages of their own.
  const packages = ((raw.tags ?? []) as Json[])
    .filter((t) => t.name !== 'platform' && t['x-svc-compatible'] !== true)
    .map((t) => ({
      id: String(t.name),
      title: String(t['x-svc-title'] ?? t.name),
      description: String(t.description ?? ''),
    }));
  const scopes = [...new Set(operations.flatMap((o) => (o.scope ? [o.scope] : [])))];
  return { raw, contract, operations, packages, scopes };
}

/**
 * Reads openapi.yaml and derives everything else that depends on it (buildApiDocument).
 * @throws when the document is unreadable or inconsistent (see buildApiDocument).
 */
export function loadApiDocument(): ApiDocument {
  // js-yaml's YAML 1.2 core schema reads this document exactly as the `yaml` package did, over ten
  // times faster (0.06 s against 0.8 s of CPU, cold): every api start and every api test file reads it.
  const text = readFileSync(yamlPath, 'utf8');
  return buildApiDocument(load(text, { schema: CORE_SCHEMA, filename: yamlPath }) as Json);
}

/** The document as served at GET /openapi.json: the contract with the absolute server URL. */
export function publicDocument(doc: ApiDocument, baseUrl: string): Json {
  const served = structuredClone(doc.contract);
  served.servers = [{ url: baseUrl }];
  // A compatible API's paths are keyed from the root: their server is the public origin and prefix.
  const root = baseUrl.endsWith(apiBasePath) ? baseUrl.slice(0, -apiBasePath.length) : baseUrl;
  for (const item of Object.values(served.paths as Record<string, Json>)) {
    if (typeof item['x-svc-base'] === 'string') item.servers = [{ url: root || '/' }];
  }
  return served;
}

/**
 * Finds the operation for a method and a path below `base` (the API's, or a compatible API's);
 * `methods` lists the path's verbs when only the method is wrong.
 */
export function matchOperation(
  doc: ApiDocument,
  method: string,
  path: string,
  base = apiBasePath,
): { operation: Operation; params: string[] } | { operation: undefined; methods: string[] } {
  const methods: string[] = [];
  for (const operation of doc.operations) {
    if (operation.base !== base) continue;
    const m = operation.matcher.exec(path);
    if (!m) continue;
    if (operation.method === method || (method === 'HEAD' && operation.method === 'GET')) {
      return { operation, params: m.slice(1) };
    }
    methods.push(operation.method);
  }
  return { operation: undefined, methods };
}
