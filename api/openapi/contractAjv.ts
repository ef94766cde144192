import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

// A CommonJS module: its default import is module.exports, the plugin itself, typed as its `default`.
const addFormats = formats as unknown as typeof formats.default;

export type Json = Record<string, unknown>;

/**
 * The ajv of express-openapi-validator 5 (whose verdicts, messages and coercions the contract checks
 * keep): JSON Schema 2020-12 for OpenAPI 3.1, all errors, schema defaults filled in, ajv-formats'
 * fast formats. Parameters (strings on the wire) are coerced, bodies not; responses are only read
 * (no defaults filled in), so an answer leaves as it would with the checks off.
 */
export function makeContractAjv(use: 'parameters' | 'bodies' | 'responses'): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false,
    strictNumbers: true,
    strictTuples: true,
    allowUnionTypes: false,
    validateSchema: false,
    coerceTypes: use === 'parameters',
    useDefaults: use !== 'responses',
    removeAdditional: false,
    allErrors: true,
    validateFormats: true,
  });
  addFormats(ajv, { mode: 'fast' });
  ajv.addFormat('media-range', true);
  ajv.addFormat('binary', true);
  return ajv;
}

/** `node` with its `$ref`s followed within the document `root`. */
export function deref(root: Json, node: Json): Json {
  let current = node;
  while (typeof current.$ref === 'string') {
    const parts = current.$ref.replace(/^#\//, '').split('/');
    current = parts.reduce<Json>((acc, key) => acc[key] as Json, root);
  }
  return current;
}
