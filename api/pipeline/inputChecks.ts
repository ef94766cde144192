import { inspectJson, unstorableMessage } from '../../shared/primitives/storableText.ts';
import type { RequestValidation } from '../openapi/requestValidation.ts';
import type { OperationCall } from './operationCall.ts';

/** A body that could not be read is answered here, after the scope checks and the rate limit. */
export function reportBodyError(call: OperationCall): void {
  // An operation that validates its own body (POST /mcp answers bad JSON in JSON-RPC) reads the error itself.
  if (call.bodyError !== undefined && call.operation.validateBody) throw call.bodyError;
}

/** The contract's checks (requestValidation.ts), which coerce parameters and fill defaults in place. */
export function contract(validation: RequestValidation) {
  return (call: OperationCall): void => {
    const problem = validation.check(call);
    if (problem) throw problem;
  };
}

function decodedSegments(path: string): string[] {
  return path.split('/').map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      // Malformed escapes are the contract's and the router's to answer.
      return segment;
    }
  });
}

/**
 * Text PostgreSQL cannot store (U+0000, unpaired surrogates) in the path, the query and a JSON body,
 * refused after the contract checks as a contract problem, so a field with its own code (a prompt
 * answers invalid_generation_prompt) keeps it.
 */
export function storableText(call: OperationCall): void {
  const paths = [
    ...(call.path.includes('%') && inspectJson(decodedSegments(call.path)).unstorable.length > 0
      ? ['/path']
      : []),
    ...(call.rawQuery !== undefined ? inspectJson(call.query).unstorable.map((p) => `/query/${p}`) : []),
    // The body was inspected as it was taken (jsonBody.ts), in the same pass as its depth.
    ...(call.unstorableBody ?? []).map((p) => `/body/${p}`),
  ];
  if (paths.length === 0) return;
  const errors = paths.map((path) => ({ path, message: unstorableMessage, errorCode: 'storable.text' }));
  throw Object.assign(new Error('unstorable text'), { status: 400, errors });
}
