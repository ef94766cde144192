/**
 * What a request's Range header asks of a representation of `size` bytes (RFC 9110 §14):
 * - `whole`: no Range, another unit, a malformed header, or several ranges (answering several with
 *   the whole representation is allowed, and spares a multipart/byteranges body);
 * - `range`: one satisfiable range, its `end` inclusive and clamped to the last byte;
 * - `unsatisfiable`: one well-formed range that selects no byte (416 with `bytes *\/size`).
 */
export type RangeRequest =
  { kind: 'whole' } | { kind: 'range'; start: number; end: number } | { kind: 'unsatisfiable' };

const whole: RangeRequest = { kind: 'whole' };
// bytes=first-last, bytes=first- and bytes=-suffix; digits only (no signs, spaces or exponents).
const singleRange = /^(\d*)-(\d*)$/;

export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return whole;
  const match = /^\s*bytes\s*=(.*)$/i.exec(header);
  if (!match) return whole;
  const specs = match[1]!.split(',').map((s) => s.trim());
  if (specs.length !== 1) return whole;
  const parts = singleRange.exec(specs[0]!);
  if (!parts) return whole;
  const [, first, last] = parts as unknown as [string, string, string];
  if (first === '' && last === '') return whole;
  if (first === '') {
    // A suffix: the last n bytes (all of them when n exceeds the size); n = 0 selects nothing.
    const length = Number(last);
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Number(last);
  // first > last is invalid syntax, which is ignored (the whole representation), not refused.
  if (last !== '' && end < start) return whole;
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end: Math.min(end, size - 1) };
}

/** Does `If-None-Match` list `etag` (weak comparison; `*` matches any current representation)? */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/**
 * Whether a Range may be honoured under `If-Range`: only when it names the current strong ETag
 * (a date or another tag means the client's copy is stale, so it gets the whole representation).
 */
export function ifRangeAllows(header: string | undefined, etag: string): boolean {
  if (header === undefined) return true;
  const tag = header.trim();
  return !tag.startsWith('W/') && tag === etag;
}
