import { setOwn } from '../../shared/primitives/ownProperty.ts';
import { toStorableText } from '../../shared/primitives/storableText.ts';

/**
 * The most a request or response body may take in the request log, in bytes of its JSON text. Rows
 * are kept 30 days, so one call must not be able to buy megabytes of them, whatever its shape.
 */
export const requestLogBodyBudgetBytes = 8192;

const secretKey = /secret|password|token|authorization|api[_-]?key|code_verifier|cookie/i;
// Token counts (`inputTokens`, `max_tokens`, `prompt_tokens_details`) are named with "tokens" (or
// "token count"), which no credential's name is (`token`, `access_token`, `idToken`): such a name
// keeps a number, and an object is judged key by key; any other value under it is still masked.
const tokenCountWords = /(?:^|_)(?:tokens|token_counts?)(?=_|$)/g;

/** The key's words joined by `_`, lower case: `promptTokensDetails` and `prompt-tokens-details` alike. */
const keyWords = (key: string) =>
  key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_');

/** Is what sits under this secret-looking key a token count, to be kept (or, an object, looked into)? */
function isTokenCount(key: string, value: unknown): boolean {
  const words = keyWords(key);
  const rest = words.replace(tokenCountWords, '_');
  if (rest === words) return false;
  // The name without its count words must not look secret itself (`secretTokens`, `apiKeyTokens`).
  if (secretKey.test(rest)) return false;
  if (value === null || typeof value === 'number') return true;
  return typeof value === 'object' && !Array.isArray(value);
}

// Our own credentials, wherever they appear (a key pasted into a prompt, a secret echoed back), and
// any bearer credential (another service's token pasted with its `Bearer`): at least 16 characters,
// so prose about "Bearer tokens" is kept.
const secretValue =
  /svc_sk_(?:test|live)_|svc_ocs_|svc_(?:at|rt|ac)_|whsec_|\bbearer\s+[A-Za-z0-9._~+/=-]{16,}/i;
/** What a logged body keeps at most. */
const bounds = {
  depth: 6,
  keys: 50,
  keyChars: 64,
  items: 50,
  stringChars: 1000,
  cutStringChars: 200,
  // Room kept in every object and array for the entry that says what was left out ("…": "n more keys").
  markerReserve: 48,
} as const;

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));
// Printable ASCII but `"` and `\` is its own JSON text between quotes: most strings and keys are
// measured without being serialised (every request-log entry measures each of its strings).
const plainAscii = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const bytesOfString = (text: string): number => (plainAscii.test(text) ? text.length + 2 : bytesOf(text));

type Fitted = { value: unknown; bytes: number };

function fitString(value: string, limit: number): Fitted | undefined {
  const text = secretValue.test(value)
    ? '[redacted]'
    : toStorableText(
        value.length > bounds.stringChars
          ? `${value.slice(0, bounds.cutStringChars)}…[${value.length} chars]`
          : value,
      );
  const bytes = bytesOfString(text);
  return bytes <= limit ? { value: text, bytes } : undefined;
}

function fitKey(key: string): string {
  return toStorableText(key.length > bounds.keyChars ? `${key.slice(0, bounds.keyChars)}…` : key);
}

/** `value` redacted into at most `limit` bytes of JSON, or undefined when not even its shortest form (a truncation mark, `[]`, `{}`) fits. */
function fit(value: unknown, depth: number, limit: number): Fitted | undefined {
  if (typeof value === 'string') return fitString(value, limit);
  if (typeof value === 'bigint') return fit(Number(value), depth, limit);
  if (value instanceof Date) return fitString(value.toISOString(), limit);
  if (value === null || typeof value === 'number' || typeof value === 'boolean') {
    const json = Number.isFinite(value) || typeof value !== 'number' ? value : null;
    // JSON writes null, a boolean and a finite number as String() does, in ASCII.
    const bytes = String(json).length;
    return bytes <= limit ? { value: json, bytes } : undefined;
  }
  if (typeof value !== 'object') return undefined;
  if (depth >= bounds.depth) return fitString('[…]', limit);
  return Array.isArray(value) ? fitArray(value, depth, limit) : fitObject(value, depth, limit);
}

function fitArray(items: unknown[], depth: number, limit: number): Fitted | undefined {
  if (limit < 2) return undefined;
  const out: unknown[] = [];
  let bytes = 2;
  for (const item of items) {
    if (out.length >= bounds.items) break;
    const separator = out.length > 0 ? 1 : 0;
    const child = fit(
      item === undefined ? null : item,
      depth + 1,
      limit - bytes - separator - bounds.markerReserve,
    );
    if (!child) break;
    out.push(child.value);
    bytes += separator + child.bytes;
  }
  if (out.length < items.length) {
    const marker = `…[${items.length - out.length} more items]`;
    const cost = (out.length > 0 ? 1 : 0) + bytesOf(marker);
    if (bytes + cost <= limit) {
      out.push(marker);
      bytes += cost;
    }
  }
  return { value: out, bytes };
}

function fitObject(source: object, depth: number, limit: number): Fitted | undefined {
  if (limit < 2) return undefined;
  const out: Record<string, unknown> = {};
  let bytes = 2;
  let kept = 0;
  let total = 0;
  let full = false;
  // Values are redacted only while they fit; past that point keys are merely counted, so a body
  // with 20,000 keys costs one cheap pass, not 20,000 copies.
  for (const key in source) {
    if (!Object.hasOwn(source, key)) continue;
    const raw = (source as Record<string, unknown>)[key];
    // What JSON.stringify would leave out anyway.
    if (raw === undefined || typeof raw === 'function') continue;
    total++;
    if (full) continue;
    const name = fitKey(key);
    if (Object.hasOwn(out, name)) continue;
    const head = (kept > 0 ? 1 : 0) + bytesOfString(name) + 1;
    const room = limit - bytes - head - bounds.markerReserve;
    const secret = secretKey.test(key) && !isTokenCount(key, raw);
    const child = secret ? fitString('[redacted]', room) : fit(raw, depth + 1, room);
    if (!child) {
      full = true;
      continue;
    }
    // A body's "__proto__" key is kept as a key: assigned, it would become the copy's prototype and vanish.
    setOwn(out, name, child.value);
    bytes += head + child.bytes;
    kept++;
    full = kept >= bounds.keys;
  }
  if (kept < total && !Object.hasOwn(out, '…')) {
    const marker = `${total - kept} more keys`;
    const cost = (kept > 0 ? 1 : 0) + bytesOf('…') + 1 + bytesOf(marker);
    if (bytes + cost <= limit) {
      out['…'] = marker;
      bytes += cost;
    }
  }
  return { value: out, bytes };
}

/**
 * A copy of a request or response body safe to keep for 30 days: secrets masked (by key name, and
 * our own credential formats wherever they appear), long strings and keys cut, at most 50 keys per
 * object, 50 items per array and 6 levels, text jsonb refuses replaced, and never more than
 * `requestLogBodyBudgetBytes` of JSON in all: what does not fit is left out, with a note saying how
 * much. The walk stops where the budget does, so a huge body costs no more than a small one.
 */
export function redact(value: unknown): unknown {
  const fitted = fit(value, 0, requestLogBodyBudgetBytes);
  if (!fitted) return null;
  // The byte count above is exact for what JSON.stringify produces; this is the belt to its braces.
  return bytesOf(fitted.value) <= requestLogBodyBudgetBytes ? fitted.value : '[…]';
}
