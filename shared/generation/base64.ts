/**
 * Strict base64 (standard or URL-safe alphabet, padding optional, whitespace ignored as in
 * line-wrapped MIME base64). Node's own decoder skips invalid characters silently, which would turn
 * a corrupt upload into a wrong image instead of an error.
 */
export function decodeBase64(data: string): Buffer | undefined {
  const compact = /\s/.test(data) ? data.replace(/\s+/g, '') : data;
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) return undefined;
  if (/[+/]/.test(compact) && /[-_]/.test(compact)) return undefined;
  const padded = compact.endsWith('=');
  if (compact.length % 4 === 1 || (padded && compact.length % 4 !== 0)) return undefined;
  return Buffer.from(compact, 'base64');
}

/** The decoded size of base64 text, without decoding it (to refuse oversized data cheaply). */
export function base64DecodedBytes(data: string): number {
  let chars = 0;
  let padding = 0;
  for (let i = data.length - 1; i >= 0 && (data[i] === '=' || /\s/.test(data[i]!)); i--) {
    if (data[i] === '=') padding++;
  }
  for (let i = 0; i < data.length; i++) {
    const c = data.charCodeAt(i);
    // Whitespace (space, \t, \n, \r) does not carry data.
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) chars++;
  }
  return Math.floor(((chars - padding) * 3) / 4);
}
