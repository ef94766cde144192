import { compileContractChecks, type ContractChecks, type RequestInput } from './contractChecks.ts';
import type { ApiDocument, NumericParameter, Operation } from './document.ts';
import { type Problem, type ValidationError, validationError } from './validationError.ts';

export type { RequestInput } from './contractChecks.ts';
export type { ValidationError } from './validationError.ts';

// Coercion takes whatever JavaScript's Number() takes ('Infinity', '0x10', '1e2', ' 5', '+5'), so
// raw values are held to these forms first. A leading zero is refused too: '010' is ten here but
// eight to some parsers, and no serialiser writes it; nor is '-0' the integer zero's canonical form.
const canonicalInteger = /^(?:0|-?[1-9][0-9]*)$/;
const canonicalNumber = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/;

function rawValue(input: RequestInput, param: NumericParameter): unknown {
  if (param.in === 'query') return input.query[param.name];
  if (param.in === 'header') {
    const value = input.headers[param.name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  }
  const segment = input.operation.matcher.exec(input.path)?.[param.position + 1];
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Integer and number parameters whose raw value is not a canonical decimal (or, for an integer,
 * not one a JavaScript number holds exactly), before they are coerced. Bounds (minimum, maximum)
 * stay the schema's to check on the exact value.
 */
function malformedNumbers(input: RequestInput): Problem[] {
  const problems: Problem[] = [];
  for (const param of input.operation.numericParameters) {
    const value = rawValue(input, param);
    // Absent, empty and repeated values are the schema's to report.
    if (typeof value !== 'string' || value === '') continue;
    const where = param.in === 'header' ? 'headers' : param.in === 'path' ? 'params' : 'query';
    const path = `/${where}/${param.in === 'header' ? param.name.toLowerCase() : param.name}`;
    if (param.integer && !(canonicalInteger.test(value) && Number.isSafeInteger(Number(value)))) {
      problems.push({
        path,
        message:
          'must be a decimal integer (digits with an optional leading -, no leading zeros) of at most 9007199254740991 in magnitude',
        errorCode: 'type.openapi.validation',
      });
    } else if (!param.integer && !canonicalNumber.test(value)) {
      problems.push({
        path,
        message:
          'must be a decimal number (digits, an optional leading - and fraction, no leading zeros or exponent)',
        errorCode: 'type.openapi.validation',
      });
    }
  }
  return problems;
}

/** The contract's problems and ours in one error; ours replace its report on the same value. */
function withMalformed(
  malformed: Problem[],
  error: ValidationError | undefined,
): ValidationError | undefined {
  if (malformed.length === 0) return error;
  if (error === undefined) return validationError(malformed);
  const ours = new Set(malformed.map((p) => p.path));
  return Object.assign(error, { errors: [...malformed, ...error.errors.filter((e) => !ours.has(e.path))] });
}

/**
 * The contract's checks of one operation call, compiled once per app: the pipeline runs them on
 * REST requests and MCP tool calls alike, so both see exactly the same verdicts.
 */
export type RequestValidation = {
  /**
   * Checks the input (its operation resolved) against the contract, coercing its parameters and
   * filling schema defaults in place; returns the problems, in the shape installErrorHandler maps.
   */
  check(input: RequestInput): ValidationError | undefined;
};

/**
 * Validates requests against the contract (openapi.yaml completed with its derived error
 * responses): handlers only ever see input that matches it. Multipart bodies are streamed by their
 * own routes and operations marked x-svc-validate-body: false check their bodies themselves.
 */
export function makeRequestValidation(doc: ApiDocument, validateResponses: boolean): RequestValidation {
  // Operations without input have nothing to validate but an empty query string; skipping the
  // schema checks keeps GET /me cheap. Tests validate responses, so there every operation goes through them.
  const validated = doc.operations.filter((o) => o.validateBody && (o.hasInput || validateResponses));
  const compiled = new Map<Operation, ContractChecks>();
  const checks = compileContractChecks(doc);
  for (const operation of validated) compiled.set(operation, checks(operation));
  return {
    check(input) {
      const malformed = malformedNumbers(input);
      const contract = compiled.get(input.operation);
      if (contract) return withMalformed(malformed, contract(input));
      // What the contract would say to a query string on an operation that declares no parameters.
      const unknown =
        input.operation.hasInput || input.rawQuery === undefined ? [] : Object.keys(input.query);
      const problems = unknown.map((name) => ({
        path: `/query/${name}`,
        message: `Unknown query parameter '${name}'`,
      }));
      return withMalformed([...malformed, ...problems], undefined);
    },
  };
}
