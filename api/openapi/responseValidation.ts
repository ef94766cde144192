import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { RequestHandler, Response } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { deref, type Json, makeContractAjv } from './contractAjv.ts';
import type { ApiDocument, Operation } from './document.ts';

/** What an answer of one documented status may carry: nothing, a JSON body (checked), or something not JSON. */
type ResponseCheck = 'no content' | 'not json' | ValidateFunction;

const isJson = (mediaType: string) => /^[^/]+\/([^;]+\+)?json\s*(;|$)/i.test(mediaType);

/** The documented response an answer of `status` is held to: its own code, its class (`4XX`), or `default`. */
function documentedStatus(responses: Json, status: number): string | undefined {
  return [String(status), `${String(status)[0]}XX`, 'default'].find((key) => key in responses);
}

/**
 * Tests hold every JSON answer of the operations the contract checks against the contract, as
 * express-openapi-validator's response validation did (the statuses it reads, 5xx left alone, its
 * messages): an answer outside it (an error code the operation does not document, say) leaves as a
 * 500, so the test that provoked it fails, with the reason in the log. Each operation's checks are
 * compiled when it first answers, with the ajv the request checks use: no OpenAPI meta-schema and
 * no bundling of the whole document per app, which cost every test file half a second of CPU.
 */
export function makeResponseValidation(doc: ApiDocument, logger: Logger): RequestHandler {
  const root = doc.contract;
  const paths = root.paths as Record<string, Record<string, Json>>;
  const ajv = makeContractAjv('responses');
  const checks = new Map<string, ResponseCheck>();

  const checkOf = (operation: Operation, key: string, response: Json): ResponseCheck => {
    const cacheKey = `${operation.id} ${key}`;
    let check = checks.get(cacheKey);
    if (check === undefined) {
      const content = response.content as Record<string, Json> | undefined;
      const json = Object.entries(content ?? {}).find(([type, media]) => isJson(type) && media.schema);
      check = !content
        ? 'no content'
        : !json
          ? 'not json'
          : ajv.compile({
              type: 'object',
              properties: { response: json[1].schema },
              components: root.components,
            });
      checks.set(cacheKey, check);
    }
    return check;
  };

  /** Why `body`, answered with `status`, is outside the contract; undefined when it is not. */
  const problem = (operation: Operation, status: number, body: unknown): string | undefined => {
    const responses = (paths[operation.documentPath]![operation.method.toLowerCase()]!.responses ??
      {}) as Json;
    const key = documentedStatus(responses, status);
    if (key === undefined) return `no schema defined for status code '${status}' in the openapi spec`;
    const check = checkOf(operation, key, deref(root, responses[key] as Json));
    if (check === 'no content') return body === undefined ? undefined : 'response should NOT have a body';
    if (check === 'not json') return undefined;
    if (body === undefined || body === null) return 'response body required.';
    return check({ response: body }) ? undefined : ajv.errorsText(check.errors, { dataVar: '' });
  };

  return (req, res, next) => {
    const operation = req.operation;
    // A compatible API's answers have that API's shapes, which its SDKs' tests hold them to.
    if (!operation?.validateBody || operation.base !== apiBasePath) return next();
    const json = res.json;
    res.json = function checked(this: Response, body: unknown) {
      res.json = json;
      const status = res.statusCode;
      const outside = res.headersSent || status >= 500 ? undefined : problem(operation, status, body);
      if (outside !== undefined) {
        logger.error(
          { err: new Error(outside), requestId: req.requestId, path: req.path, status },
          'response does not match the contract',
        );
        res.statusCode = 500;
      }
      return json.call(this, body);
    };
    next();
  };
}
