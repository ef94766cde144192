import { createHash } from 'node:crypto';
import { stripTypeScriptTypes } from 'node:module';

/** Jest transform: Node's own type stripping, whitespace-preserving so stack traces keep their lines. */
export default {
  process(source, filename) {
    return { code: stripTypeScriptTypes(source, { mode: 'strip', sourceUrl: filename }) };
  },
  getCacheKey(source, filename) {
    return createHash('sha256').update(process.version).update(filename).update(source).digest('hex');
  },
};
