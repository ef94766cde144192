import { describe, expect, it } from '@jest/globals';
import express from 'express';
import supertest from 'supertest';

import { loadApiDocument } from '../../api/openapi/document.ts';
import { makeResponseValidation } from '../../api/openapi/responseValidation.ts';
import { errorBody } from '../../api/pipeline/appErrors.ts';
import { apiBasePath } from '../../shared/config/config.ts';
import { AppError } from '../../shared/errors/appError.ts';

const doc = loadApiDocument();

/** An app whose one route answers `body` with `status`, after the response validation tests use. */
function appAnswering(operationId: string, status: number, body: unknown) {
  const logged: unknown[] = [];
  const logger = { error: (fields: unknown) => logged.push(fields) } as never;
  const check = makeResponseValidation(doc, logger);
  const operation = doc.operations.find((o) => o.id === operationId)!;
  const app = express();
  app.use(apiBasePath, (req, res, next) => {
    req.operation = operation;
    req.requestId = 'req_response_check';
    check(req, res, next);
  });
  app.use(apiBasePath, (_req, res) => {
    res.status(status).json(body);
  });
  return { http: supertest(app), logged };
}

describe('response validation (VALIDATE_RESPONSES, on in every test)', () => {
  it('turns an answer outside the contract into a 500 and logs why', async () => {
    const { http, logged } = appAnswering('platform.me', 200, { bogus: true });
    expect((await http.get(`${apiBasePath}/me`)).status).toBe(500);
    expect(logged).toEqual([expect.objectContaining({ requestId: 'req_response_check', status: 200 })]);
  });

  it('passes an answer the contract documents', async () => {
    const body = errorBody(new AppError('invalid_api_key', 'No key.'), 'req_response_check');
    const { http, logged } = appAnswering('platform.me', 401, body);
    const res = await http.get(`${apiBasePath}/me`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual(body);
    expect(logged).toEqual([]);
  });

  it('refuses a status the operation does not document, even with a well-formed error body', async () => {
    const body = errorBody(new AppError('video_not_ready', 'Not yet.'), 'req_response_check');
    const { http, logged } = appAnswering('platform.me', 409, body);
    expect((await http.get(`${apiBasePath}/me`)).status).toBe(500);
    const [entry] = logged as { err: Error }[];
    expect(entry!.err.message).toBe("no schema defined for status code '409' in the openapi spec");
  });

  it('leaves a 5xx answer as it is: the error handler made it, and the test sees it', async () => {
    const { http, logged } = appAnswering('platform.me', 503, { bogus: true });
    const res = await http.get(`${apiBasePath}/me`);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ bogus: true });
    expect(logged).toEqual([]);
  });

  it('checks the answers of a templated path too', async () => {
    const { http } = appAnswering('tasks.read', 200, { bogus: true });
    expect((await http.get(`${apiBasePath}/tasks/tsk_123`)).status).toBe(500);
  });
});
