import { readFileSync } from 'node:fs';

import { describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import YAML from 'yaml';

import {
  authErrorCodes,
  buildApiDocument,
  derivedErrorCodes,
  idempotencyErrorCodes,
  loadApiDocument,
  matchOperation,
  publicDocument,
} from '../../api/openapi/document.ts';
import { errorStatus } from '../../shared/errors/codes.ts';

const doc = loadApiDocument();
/** The API's own operations (a compatible API's answer errors in its own shape: api/compat/). */
const nativeOperations = () => doc.operations.filter((op) => op.base === '/api/pub/v1');
const readYaml = () =>
  YAML.parse(readFileSync(new URL('../../api/openapi/openapi.yaml', import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type ContractOperation = { 'x-svc-error-codes': string[]; responses: Record<string, Json> };

const contractOperation = (path: string, method: string) =>
  (doc.contract.paths as Record<string, Record<string, ContractOperation>>)[path]![method]!;

/** A response as a client sees it: component references followed. */
function resolved(response: Json): Json {
  if (typeof response.$ref !== 'string') return response;
  const name = response.$ref.replace('#/components/responses/', '');
  return (doc.contract.components as Json).responses[name];
}

/** The codes an error response allows in error.code. */
const responseCodes = (response: Json): string[] =>
  resolved(response).content['application/json'].schema.properties.error.properties.code.enum;

describe('the OpenAPI document as the source of truth', () => {
  it('gives every scoped operation a unique scope in a known package', () => {
    expect(new Set(doc.scopes).size).toBe(doc.scopes.length);
    for (const op of nativeOperations()) {
      if (op.scope === undefined) continue;
      expect(op.scope).toBe(op.id);
      expect(doc.packages.map((p) => p.id)).toContain(op.scope.split('.')[0]);
    }
    // A compatible API's operations run under the API's own scopes, and are no package of their own.
    const compatible = doc.operations.filter((op) => op.base !== '/api/pub/v1');
    expect(compatible.length).toBeGreaterThan(0);
    for (const op of compatible) {
      if (op.scope !== undefined) expect(nativeOperations().map((o) => o.id)).toContain(op.scope);
      expect(doc.packages.map((p) => p.id)).not.toContain(op.packageId);
    }
  });

  it('routes paths with parameters and prefers the literal path', () => {
    const upload = matchOperation(doc, 'POST', '/files/uploads');
    expect(upload.operation?.id).toBe('files.createUpload');
    const task = matchOperation(doc, 'GET', '/tasks/tsk_123/messages');
    expect(task.operation?.id).toBe('tasks.listMessages');
    expect(matchOperation(doc, 'HEAD', '/me').operation?.id).toBe('platform.me');
  });

  it('reports the allowed methods of a known path with a wrong method', () => {
    const wrong = matchOperation(doc, 'PUT', '/tasks/tsk_1/messages');
    expect(wrong.operation).toBeUndefined();
    expect('methods' in wrong && wrong.methods.sort()).toEqual(['GET', 'POST']);
  });

  it('maps spec-specific validation codes from the schema', () => {
    const images = doc.operations.find((o) => o.id === 'images.generate')!;
    expect(images.fieldErrorCodes.get('body.prompt')).toBe('invalid_generation_prompt');
    expect(images.fieldErrorCodes.get('body.aspectRatio')).toBe('invalid_image_aspect_ratio');
    expect(images.fieldErrorCodes.get('headers.idempotency-key')).toBe('invalid_idempotency_key');
  });

  it('serves the auth errors with every authenticated operation', () => {
    const served = publicDocument(doc, 'https://api.example.com/api/pub/v1') as {
      servers: { url: string }[];
      paths: Record<string, Record<string, { 'x-svc-error-codes': string[] }>>;
    };
    expect(served.servers).toEqual([{ url: 'https://api.example.com/api/pub/v1' }]);
    expect(served.paths['/me']!.get!['x-svc-error-codes']).toContain('invalid_api_key');
    expect(served.paths['/status']!.get!['x-svc-error-codes']).not.toContain('invalid_api_key');
  });
});

describe('the error codes and responses each operation documents', () => {
  it('derives auth, rate limit, idempotency, 422, 405 and 500 from facts in the document', () => {
    const raw = readYaml();
    for (const op of nativeOperations()) {
      const codes = contractOperation(op.path, op.method.toLowerCase())['x-svc-error-codes'];
      expect(codes).toEqual(op.errorCodes);
      for (const code of ['invalid_request_body', 'method_not_allowed', 'internal_error']) {
        expect(codes).toContain(code);
      }
      for (const code of [...authErrorCodes, 'rate_limited']) {
        expect(codes.includes(code)).toBe(op.authenticated);
      }
      for (const code of idempotencyErrorCodes) expect(codes.includes(code)).toBe(op.idempotent);
      // file_too_large only where the operation takes files (its own code), not for any body.
      const own = (raw.paths as Json)[op.path][op.method.toLowerCase()]['x-svc-error-codes'] as string[];
      expect(codes.includes('file_too_large')).toBe(own.includes('file_too_large'));
    }
  });

  it('lists the Idempotency-Key codes on the generation operations that honour the key', () => {
    for (const id of [
      'images.generate',
      'text.generate',
      'embeddings.create',
      'ocr.extract',
      'videos.create',
    ]) {
      const op = doc.operations.find((o) => o.id === id)!;
      expect(op.idempotent).toBe(true);
      expect(op.errorCodes).toEqual(expect.arrayContaining(idempotencyErrorCodes));
      const responses = contractOperation(op.path, op.method.toLowerCase()).responses;
      expect(responseCodes(responses['400']!)).toEqual(['invalid_idempotency_key']);
      expect(responseCodes(responses['409']!)).toEqual([
        'idempotency_key_reused',
        'idempotency_request_in_progress',
      ]);
    }
  });

  it('gives every error status its own response, narrowed to exactly the codes of that status', () => {
    for (const op of nativeOperations()) {
      const { responses, 'x-svc-error-codes': codes } = contractOperation(op.path, op.method.toLowerCase());
      expect(responses.default).toBeUndefined();
      const errorStatuses = Object.keys(responses).filter((s) => Number(s) >= 400);
      expect(errorStatuses.sort()).toEqual(
        [...new Set(codes.map((c) => String(errorStatus[c as keyof typeof errorStatus])))].sort(),
      );
      const documented: string[] = [];
      for (const status of errorStatuses) {
        const statusCodes = responseCodes(responses[status]!);
        for (const code of statusCodes) {
          expect(errorStatus[code as keyof typeof errorStatus]).toBe(Number(status));
        }
        documented.push(...statusCodes);
      }
      // x-svc-error-codes stays complete: the union of what the responses allow, nothing more.
      expect(documented.sort()).toEqual([...codes].sort());
    }
  });

  it('documents the headers of 405 (Allow) and 429 (Retry-After)', () => {
    const me = contractOperation('/me', 'get').responses;
    expect(Object.keys(resolved(me['405']!).headers)).toEqual(['Allow']);
    expect(Object.keys(resolved(me['429']!).headers)).toEqual(['Retry-After']);
    expect(contractOperation('/status', 'get').responses['429']).toBeUndefined();
    expect(contractOperation('/status', 'get').responses['401']).toBeUndefined();
  });

  it('keeps openapi.yaml free of codes the derivation adds', () => {
    const raw = readYaml();
    for (const op of doc.operations) {
      const written = (raw.paths as Json)[op.documentPath][op.method.toLowerCase()];
      const derived = derivedErrorCodes({ authenticated: op.authenticated, idempotent: op.idempotent });
      const restated = (written['x-svc-error-codes'] as string[]).filter((c) =>
        (derived as string[]).includes(c),
      );
      expect({ operation: op.id, restated }).toEqual({ operation: op.id, restated: [] });
    }
  });

  it('refuses an error response written by hand', () => {
    const raw = readYaml();
    (raw.paths as Json)['/me'].get.responses['404'] = { description: 'by hand' };
    expect(() => buildApiDocument(raw)).toThrow(/get \/me declares 404; error responses are derived/);
  });

  it('is a valid OpenAPI 3.1 document, as validated and as served', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc.contract) as never);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    const served = publicDocument(doc, 'https://api.svc.test/api/pub/v1');
    // A compatible API's path items get the public origin as their server (their keys start at the root).
    const paths = served.paths as Record<string, Json>;
    expect(paths['/api/openai/v1/chat/completions']?.servers).toEqual([{ url: 'https://api.svc.test' }]);
    for (const item of Object.values(paths)) {
      if (item['x-svc-base'] !== undefined) item.servers = [{ url: '/' }];
    }
    expect({ ...served, servers: doc.contract.servers }).toEqual(doc.contract);
  });
});

describe('numeric parameters', () => {
  it('finds integer and number parameters in the query, the path and headers, through $refs', () => {
    const raw = readYaml();
    (raw.components as Json).parameters.PageNumber = {
      name: 'page',
      in: 'query',
      schema: { type: 'integer' },
    };
    (raw.paths as Json)['/widgets/{widgetId}/parts/{partNo}'] = {
      parameters: [{ name: 'partNo', in: 'path', required: true, schema: { type: 'integer' } }],
      get: {
        operationId: 'widgets.read',
        tags: ['platform'],
        summary: 'Read a widget part',
        'x-svc-error-codes': [],
        parameters: [
          { name: 'widgetId', in: 'path', required: true, schema: { type: 'string' } },
          { $ref: '#/components/parameters/PageNumber' },
          { name: 'X-Ratio', in: 'header', schema: { type: ['number', 'null'] } },
        ],
        responses: { '200': { description: 'ok' } },
      },
    };
    const op = buildApiDocument(raw).operations.find((o) => o.id === 'widgets.read')!;
    expect(op.numericParameters).toEqual([
      { in: 'path', name: 'partNo', integer: true, position: 1 },
      { in: 'query', name: 'page', integer: true, position: -1 },
      { in: 'header', name: 'X-Ratio', integer: false, position: -1 },
    ]);
    const limit = doc.operations.find((o) => o.id === 'tasks.listMessages')!.numericParameters;
    expect(limit).toEqual([{ in: 'query', name: 'limit', integer: true, position: -1 }]);
  });
});
