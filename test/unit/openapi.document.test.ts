import { describe, expect, it } from '@jest/globals';

import { loadApiDocument, matchOperation, publicDocument } from '../../api/openapi/document.ts';

const doc = loadApiDocument();

describe('the OpenAPI document as the source of truth', () => {
  it('gives every scoped operation a unique scope in a known package', () => {
    expect(new Set(doc.scopes).size).toBe(doc.scopes.length);
    for (const op of doc.operations) {
      if (op.scope === undefined) continue;
      expect(op.scope).toBe(op.id);
      expect(doc.packages.map((p) => p.id)).toContain(op.scope.split('.')[0]);
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
