import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import supertest from 'supertest';
import YAML from 'yaml';

import { makeApp } from '../../../api/app.ts';
import { buildApiDocument } from '../../../api/openapi/document.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let t: TestContext;
let tenant: Tenant;

// A deployment's address: the linter rightly flags localhost and example.com servers.
beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ env: { PUBLIC_BASE_URL: 'https://api.svc.test' } }));
});
afterAll(() => t.close());

const readYaml = () =>
  YAML.parse(readFileSync(new URL('../../../api/openapi/openapi.yaml', import.meta.url), 'utf8')) as Json;

describe('GET /openapi.json', () => {
  it("lints clean under Redocly's recommended rules: no errors, no warnings", async () => {
    const res = await t.http.get(api('/openapi.json')).expect(200);
    const problems = await lintFromString({
      source: res.text,
      absoluteRef: 'https://api.svc.test/api/pub/v1/openapi.json',
      config: await createConfig({ extends: ['recommended'] }),
    });
    const described = problems.map(
      (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`,
    );
    expect(described).toEqual([]);
  });

  it('types every error: one response per status, error.code narrowed to that status', async () => {
    const doc = (await t.http.get(api('/openapi.json')).expect(200)).body as Json;
    const resolve = (r: Json): Json =>
      r.$ref ? doc.components.responses[String(r.$ref).split('/').pop()!] : r;
    const codesAt = (path: string, method: string, status: string): string[] =>
      resolve(doc.paths[path][method].responses[status]).content['application/json'].schema.properties.error
        .properties.code.enum;
    // What a missing, revoked or expired key is told: /me's 401s, and the first of every operation's codes.
    const keyCodes = ['invalid_api_key', 'api_key_revoked', 'api_key_expired'];
    expect(doc.paths['/text'].post.responses.default).toBeUndefined();
    expect(codesAt('/text', 'post', '400')).toEqual(['invalid_idempotency_key']);
    expect(codesAt('/text', 'post', '409')).toEqual([
      'idempotency_key_reused',
      'idempotency_request_in_progress',
    ]);
    expect(codesAt('/text', 'post', '422')).toEqual([
      'invalid_request_body',
      'project_id_required',
      'invalid_generation_prompt',
    ]);
    expect(codesAt('/text', 'post', '402')).toEqual(['key_spend_limit_reached', 'insufficient_credits']);
    expect(codesAt('/tasks/{taskId}/messages', 'get', '422')).toEqual([
      'invalid_request_body',
      'invalid_cursor',
    ]);
    expect(codesAt('/tasks/{taskId}/messages', 'get', '405')).toEqual(['method_not_allowed']);
    expect(codesAt('/me', 'get', '401')).toEqual(keyCodes);
    expect(codesAt('/status', 'get', '405')).toEqual(['method_not_allowed']);
    expect(doc.paths['/status'].get.responses['401']).toBeUndefined();
    expect(doc.paths['/text'].post['x-svc-error-codes']).toEqual([
      ...keyCodes,
      'api_key_ip_not_allowed',
      'developer_access_revoked',
      'api_key_project_scope',
      'api_key_operation_scope',
      'method_not_allowed',
      'invalid_request_body',
      'invalid_idempotency_key',
      'idempotency_key_reused',
      'idempotency_request_in_progress',
      'idempotent_output_discarded',
      'project_id_required',
      'invalid_generation_prompt',
      'key_spend_limit_reached',
      'insufficient_credits',
      'rate_limited',
      'internal_error',
      'service_unavailable',
    ]);
    expect(codesAt('/status', 'get', '503')).toEqual(['service_unavailable']);
    expect(doc.components.responses.ServiceUnavailable.headers['Retry-After']).toBeDefined();
  });
});

describe('responses are validated against the same contract in tests', () => {
  it('an error code an operation does not document leaves as a 500, so the test that provokes it fails', async () => {
    const missingTask = api('/tasks/task_missing');
    const documented = await t.http.get(missingTask).set(bearer(tenant.testKey)).expect(404);
    expect(documented.body.error.code).toBe('not_found');

    const raw = readYaml();
    raw.paths['/tasks/{taskId}'].get['x-svc-error-codes'] = [];
    const undocumented = makeApp({ ...t.deps, doc: buildApiDocument(raw) });
    await supertest(undocumented).get(missingTask).set(bearer(tenant.testKey)).expect(500);
  });
});
