import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import supertest from 'supertest';
import YAML from 'yaml';

import { makeApp } from '../../../api/app.ts';
import { buildApiDocument } from '../../../api/openapi/document.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let taskId: string;
/** The same app as production runs it: the validator skips operations without input. */
let production: Express;

type Page = { data: unknown[]; hasMore: boolean };

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant());
  const created = await postAs(t.http, tenant.testKey, '/tasks').send({ input: 'one' }).expect(202);
  taskId = (created.body as { task: { id: string } }).task.id;
  for (const input of ['two', 'three']) {
    await postAs(t.http, tenant.testKey, `/tasks/${taskId}/messages`).send({ input }).expect(202);
  }
  production = makeApp({ ...t.deps, config: { ...t.deps.config, validateResponses: false } });
});
afterAll(() => t.close());

/** Sends `limit` exactly as given (supertest's .query would re-encode it). */
const listWith = (app: Express, rawQuery: string) =>
  supertest(app)
    .get(api(`/tasks/${taskId}/messages?${rawQuery}`))
    .set(bearer(tenant.testKey));

describe('integer query values: only canonical decimal forms within the schema bounds', () => {
  // Not decimal numerals at all, or not canonical ones: a sign, blanks, exponents, hex, a fraction,
  // a leading zero (read as octal by some parsers, so refused rather than guessed at), negative zero.
  const malformed = [
    'Infinity',
    '-Infinity',
    'NaN',
    '0x10',
    '1e2',
    '%205',
    '5%20',
    '%2B5',
    '05',
    '007',
    '1.5',
    '5.0',
    '-0',
    '1_0',
    '%EF%BC%95', // a full-width digit five
  ];
  // Canonical, but outside minimum 1 / maximum 100, or beyond what a JavaScript number holds exactly.
  const outOfBounds = ['0', '-1', '101', '9007199254740993', '99999999999999999999999'];

  it.each([...malformed, ...outOfBounds])(
    'limit=%s answers 422 invalid_request_body naming limit',
    async (raw) => {
      for (const app of [t.app, production]) {
        const res = await listWith(app, `limit=${raw}`).expect(422);
        expect(res.body).toEqual({
          error: {
            code: 'invalid_request_body',
            message: expect.any(String),
            requestId: res.headers['x-request-id'],
            issues: [{ path: 'limit', message: expect.any(String) }],
          },
        });
      }
    },
  );

  it('names the canonical form in the issue', async () => {
    const res = await listWith(t.app, 'limit=1e2').expect(422);
    expect(res.body.error.issues[0].message).toMatch(/decimal integer/);
  });

  it('refuses an empty or a repeated limit', async () => {
    for (const query of ['limit=', 'limit=5&limit=6']) {
      const res = await listWith(production, query).expect(422);
      expect(res.body.error.issues).toEqual([{ path: 'limit', message: expect.any(String) }]);
    }
  });

  it('reports a bad limit together with the other problems of the query', async () => {
    const res = await listWith(production, 'limit=0x10&other=1').expect(422);
    const paths = (res.body.error.issues as { path: string }[]).map((i) => i.path).sort();
    expect(paths).toEqual(['limit', 'other']);
  });

  it.each([
    ['1', 1, true],
    ['2', 2, true],
    ['3', 3, false],
    ['100', 3, false],
  ] as const)('limit=%s is accepted and pages by that number', async (raw, count, hasMore) => {
    for (const app of [t.app, production]) {
      const res = await listWith(app, `limit=${raw}`).expect(200);
      const page = res.body as Page;
      expect(page.data).toHaveLength(count);
      expect(page.hasMore).toBe(hasMore);
    }
  });

  it('without limit the default page size applies', async () => {
    const res = await listWith(production, '').expect(200);
    expect((res.body as Page).data).toHaveLength(3);
  });
});

describe('query values on operations that take none', () => {
  it('GET /me?x=1 is refused the same way in production as under test validation', async () => {
    for (const app of [t.app, production]) {
      const res = await supertest(app).get(api('/me?x=1')).set(bearer(tenant.testKey)).expect(422);
      expect(res.body.error).toMatchObject({
        code: 'invalid_request_body',
        issues: [{ path: 'x', message: expect.any(String) }],
      });
    }
  });
});

describe('integer and number values in the path and in headers', () => {
  /** The real document plus one operation with a numeric path parameter and a numeric header. */
  function appWithWidgets(): Express {
    const raw = YAML.parse(
      readFileSync(new URL('../../../api/openapi/openapi.yaml', import.meta.url), 'utf8'),
    ) as { paths: Record<string, unknown> };
    raw.paths['/widgets/{widgetNo}'] = {
      get: {
        operationId: 'widgets.read',
        tags: ['platform'],
        summary: 'Read a widget',
        'x-svc-error-codes': ['not_found'],
        parameters: [
          { name: 'widgetNo', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
          { name: 'X-Ratio', in: 'header', schema: { type: 'number' } },
        ],
        responses: { '200': { description: 'The widget.' } },
      },
    };
    return makeApp({ ...t.deps, doc: buildApiDocument(raw) });
  }

  it('refuses a path value that is not a canonical decimal, naming the parameter', async () => {
    const app = appWithWidgets();
    for (const raw of ['0x10', '1e2', '05', '%2B5', 'Infinity', '1.5']) {
      const res = await supertest(app)
        .get(api(`/widgets/${raw}`))
        .set(bearer(tenant.testKey))
        .expect(422);
      expect(res.body.error).toMatchObject({
        code: 'invalid_request_body',
        issues: [{ path: 'widgetNo', message: expect.stringMatching(/decimal integer/) }],
      });
    }
    // Past validation: there is no handler for this made-up operation.
    const ok = await supertest(app).get(api('/widgets/16')).set(bearer(tenant.testKey)).expect(404);
    expect(ok.body.error.message).toMatch(/not available on this server/);
  });

  it('refuses a header value that is not a canonical decimal number', async () => {
    const app = appWithWidgets();
    // (Blanks around a header value are not part of it in HTTP: the parser strips them.)
    for (const raw of ['1e2', '0x10', '.5', '1.', '01.5', 'NaN']) {
      const res = await supertest(app)
        .get(api('/widgets/16'))
        .set(bearer(tenant.testKey))
        .set('X-Ratio', raw)
        .expect(422);
      expect(res.body.error).toMatchObject({
        code: 'invalid_request_body',
        issues: [{ path: 'x-ratio', message: expect.stringMatching(/decimal number/) }],
      });
    }
    for (const raw of ['1.5', '-0.25', '3']) {
      await supertest(app)
        .get(api('/widgets/16'))
        .set(bearer(tenant.testKey))
        .set('X-Ratio', raw)
        .expect(404);
    }
  });
});
