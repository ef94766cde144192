/**
 * A Content-Disposition with the name twice (RFC 6266): `filename` as plain ASCII for old clients,
 * and `filename*` in UTF-8 (RFC 8187) for the real one. Path separators, quotes and control
 * characters never reach either.
 */
export function contentDisposition(disposition: 'inline' | 'attachment', filename: string): string {
  const clean =
    [...filename]
      .map((c) => (c.charCodeAt(0) < 0x20 || c === '\u007f' || '/\\"'.includes(c) ? '_' : c))
      .join('')
      .trim() || 'download';
  const ascii = clean.replace(/[^\x20-\x7e]/g, '_').replace(/[%;]/g, '_');
  // encodeURIComponent leaves ' ( ) * ! unescaped; RFC 8187 attr-char does not allow them.
  const encoded = encodeURIComponent(clean).replace(
    /['()*!]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
