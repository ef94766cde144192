import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

import { deref, type Json, makeContractAjv } from './contractAjv.ts';
import type { ApiDocument, Operation } from './document.ts';
import { type Problem, type ValidationError, validationError } from './validationError.ts';

/** What the contract checks read of a call: plain data (api/pipeline/operationCall.ts has all of it). */
export type RequestInput = {
  operation: Operation;
  /** Below the API base, as sent. */
  path: string;
  /** Parsed; coerced and completed with defaults in place. */
  query: Record<string, unknown>;
  /** The undecoded query string, or undefined when the URL has none. */
  rawQuery: string | undefined;
  params: Record<string, string>;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: unknown;
};

/** One operation's compiled checks: the problems of an input, or undefined. */
export type ContractChecks = (input: RequestInput) => ValidationError | undefined;

type Parameter = { name: string; in: string; required?: boolean; allowEmptyValue?: boolean; schema?: Json };

// The characters a query value must carry percent-encoded (RFC 3986 reserved), read undecoded.
const reserved = /[:/?#[\]@!$&'()*+,;=]/;

/** The media type and its parameters as the validator compares them (charset lower-cased, boundary left out). */
function normalise(contentType: string | undefined): { mediaType: string; full: string } | undefined {
  if (contentType === undefined) return undefined;
  const parameters = new Map<string, string>();
  for (const match of contentType.matchAll(/;\s*([^=]+)=([^;]+)/g)) {
    const key = match[1]!.toLowerCase();
    parameters.set(key, key === 'charset' ? match[2]!.toLowerCase() : match[2]!);
  }
  const mediaType = contentType.split(';')[0]!.toLowerCase().trim();
  const rest = [...parameters.keys()]
    .sort()
    .filter((key) => key !== 'boundary')
    .map((key) => `; ${key}=${parameters.get(key)}`)
    .join('');
  return { mediaType, full: mediaType + rest };
}

/**
 * The body schema for the request's Content-Type: its own media type, or a wildcard the operation
 * declares. A type the operation does not take answers 415 (a body that is optional may be left out).
 */
function bodySchemaFor(
  requestBody: Json | undefined,
  contentType: string | undefined,
): Json | ValidationError {
  const content = requestBody?.content as Record<string, Json> | undefined;
  if (!content) return {};
  const sent = normalise(contentType);
  const declared = Object.keys(content);
  const exact = sent && declared.find((type) => normalise(type)!.full === sent.full);
  const equivalent = sent && declared.find((type) => normalise(type)!.full === sent.mediaType);
  const wildcard =
    sent &&
    [...declared]
      .sort()
      .reverse()
      .find(
        (type) =>
          type === '*/*' || (/^[a-z]+\/\*$/.test(type) && sent.full.startsWith(`${type.split('/')[0]}/`)),
      );
  const match = exact ?? equivalent ?? wildcard;
  if (match) return (content[match]!.schema as Json | undefined) ?? {};
  if (!sent && requestBody!.required === false) return {};
  // The validator's own words, `undefined` included, for a request that names no media type.
  const message = `unsupported media type ${sent?.full}`;
  return validationError([{ path: '', message }], 415);
}

/** Whether every path parameter of the request decodes (a malformed %-escape is refused first). */
function pathDecodes(input: RequestInput): boolean {
  const segments = input.operation.matcher.exec(input.path)?.slice(1) ?? [];
  try {
    segments.forEach((segment) => decodeURIComponent(segment));
    return true;
  } catch {
    return false;
  }
}

/** `?a&b=1&b=2` → a: [undefined], b: ['1', '2'], undecoded. */
function rawPairs(rawQuery: string): Map<string, (string | undefined)[]> {
  const pairs = new Map<string, (string | undefined)[]>();
  for (const pair of rawQuery.split('&')) {
    const [key, value] = pair.split('=') as [string, string | undefined];
    pairs.set(key, [...(pairs.get(key) ?? []), value]);
  }
  return pairs;
}

/** The query checks that precede the schema's, each refusing on the first problem it finds. */
function queryProblem(input: RequestInput, query: Parameter[]): Problem | undefined {
  const raw = input.rawQuery ? rawPairs(input.rawQuery) : undefined;
  for (const param of query) {
    for (const value of raw?.get(param.name) ?? []) {
      if (value !== undefined && reserved.test(value)) {
        const message = `Parameter '${param.name}' must be url encoded. Its value may not contain reserved characters.`;
        return { path: `/query/${param.name}`, message };
      }
    }
  }
  // `a[b]=1` is read as the object a (qs's bracket notation, one level here), so the name checked is `a`.
  for (const key of Object.keys(input.query)) {
    if (!key.includes('[')) continue;
    const name = key.split('[')[0]!;
    const inner = /^\[([^\]]*)\]/.exec(key.slice(name.length))?.[1];
    const value = input.query[key];
    input.query[name] = inner === '' ? [value] : { [inner ?? key.slice(name.length)]: value };
    delete input.query[key];
  }
  const known = new Map(query.map((p) => [p.name, p]));
  for (const name of Object.keys(input.query)) {
    const param = known.get(name);
    if (!param) return { path: `/query/${name}`, message: `Unknown query parameter '${name}'` };
    if (!param.allowEmptyValue && input.query[name] === '') {
      return { path: `/query/${name}`, message: `Empty value found for query parameter '${name}'` };
    }
  }
  return undefined;
}

/** ajv's errors as the validator reports them (an enum lists its values; a missing or extra property is named). */
function toProblems(errors: ErrorObject[]): Problem[] {
  return errors.map((e) => {
    const params = e.params as {
      missingProperty?: string;
      additionalProperty?: string;
      allowedValues?: unknown[];
    };
    const message =
      e.keyword === 'enum' && params.allowedValues
        ? `${e.message}: ${params.allowedValues.join(', ')}`
        : e.message;
    const named = params.missingProperty ?? params.additionalProperty;
    return {
      path: named !== undefined ? `${e.instancePath}/${named}` : e.instancePath || e.schemaPath,
      message: message ?? 'is invalid',
      errorCode: `${e.keyword}.openapi.validation`,
    };
  });
}

/**
 * Compiles, per operation, the checks express-openapi-validator made of a request, in its order:
 * the path's escapes, the body's Content-Type, the query's encoding and names, then the parameters (coerced) and the
 * body against their schemas, both reported together.
 */
export function compileContractChecks(doc: ApiDocument): (operation: Operation) => ContractChecks {
  const root = doc.contract;
  const components = root.components;
  const general = makeContractAjv('parameters');
  const bodies = makeContractAjv('bodies');
  const paths = root.paths as Record<string, Record<string, Json>>;
  return (operation) => {
    const raw = paths[operation.documentPath]![operation.method.toLowerCase()]!;
    const parameters = ((raw.parameters ?? []) as Json[]).map((p) => deref(root, p) as Parameter);
    const groups: Record<string, Json> = { query: {}, headers: {}, params: {} };
    for (const param of parameters) {
      const where = param.in === 'header' ? 'headers' : param.in === 'path' ? 'params' : param.in;
      const group = (groups[where] = groups[where]?.properties
        ? groups[where]
        : { type: 'object', properties: {} });
      const name = param.in === 'header' ? param.name.toLowerCase() : param.name;
      (group.properties as Json)[name] = param.schema ? deref(root, param.schema) : param;
      if (param.required) group.required = [...((group.required as string[] | undefined) ?? []), name];
    }
    const checkParameters = general.compile({
      components,
      required: ['query', 'headers', 'params'],
      properties: { ...groups, cookies: {}, body: {} },
    });
    const query = parameters.filter((p) => p.in === 'query');
    const requestBody = raw.requestBody ? deref(root, raw.requestBody as Json) : undefined;
    const bodyChecks = new Map<string, ValidateFunction | ValidationError>();
    const bodyCheckFor = (contentType: string | undefined) => {
      const key = normalise(contentType)?.full ?? '';
      let check = bodyChecks.get(key);
      if (check === undefined) {
        const schema = bodySchemaFor(requestBody, contentType);
        check =
          schema instanceof Error
            ? schema
            : bodies.compile({
                components,
                properties: { query: {}, headers: {}, params: {}, cookies: {}, body: schema },
                ...(requestBody?.required === true ? { required: ['body'] } : {}),
              });
        // One entry per distinct Content-Type an operation is sent: a handful.
        if (bodyChecks.size < 32) bodyChecks.set(key, check);
      }
      return check;
    };
    return (input) => {
      if (!pathDecodes(input)) {
        return validationError([{ path: `${input.operation.base}${input.path}`, message: "malformed uri'" }]);
      }
      const contentType = input.headers['content-type'];
      const checkBody = bodyCheckFor(Array.isArray(contentType) ? contentType[0] : contentType);
      if (checkBody instanceof Error) return validationError(checkBody.errors, checkBody.status);
      const refused = queryProblem(input, query);
      if (refused) return validationError([refused]);
      const data = { query: input.query, headers: input.headers, params: input.params, body: input.body };
      const validParameters = checkParameters(data);
      const validBody = checkBody(data);
      if (validParameters && validBody) return undefined;
      return validationError(toProblems([...(checkParameters.errors ?? []), ...(checkBody.errors ?? [])]));
    };
  };
}
