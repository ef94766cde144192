// Beyond this a text is cut: a log line carries an error, not a payload.
const maxTextLength = 4000;

/**
 * Secrets that turn up in error texts, each replaced where it stands so the text stays readable:
 * credentials in URLs (connection strings), `password=…`-style settings (libpq keywords, inspected
 * options objects; an `Authorization: Bearer …` value with its scheme), bearer credentials, our
 * formats (keys, OAuth codes, tokens and client secrets, webhook secrets), provider keys, presigned
 * S3 parameters.
 */
const secretPatterns: [RegExp, string][] = [
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, '$1[redacted]@'],
  [
    /\b((?:password|passwd|pwd|secret(?:[_-]?(?:access)?[_-]?key)?|access[_-]?key(?:[_-]?id)?|api[_-]?key|token|authorization)["']?\s*[=:]\s*)("[^"]*"|'[^']*'|(?:(?:Bearer|Basic|Token)\s+)?[^\s,;&"'}]+)/gi,
    '$1[redacted]',
  ],
  [/\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, 'Bearer [redacted]'],
  [/\b(svc_(?:sk|at|rt|ac|ocs)_)[A-Za-z0-9_]+/g, '$1[redacted]'],
  [/\b(whsec_)[A-Za-z0-9+/=]+/g, '$1[redacted]'],
  [/\b(sk-)[A-Za-z0-9_*-]{8,}/g, '$1[redacted]'],
  [/\b(X-Amz-(?:Signature|Credential|Security-Token))=[^&\s"']+/gi, '$1=[redacted]'],
];

// Short configured values (the embedded S3 server's `S3RVER`, a local `postgres` password) are
// not worth hiding, and replacing every occurrence of a common word would garble the logs; the
// patterns above still catch them where they stand in a URL or a `password=` setting.
const minKnownSecretLength = 12;

/** Replaces secrets in `text`: the known patterns and each of `known` (configured secret values). */
export function scrubSecrets(text: string, known: readonly string[] = []): string {
  let out = text.length > maxTextLength ? `${text.slice(0, maxTextLength)}…` : text;
  for (const secret of known) {
    if (secret.length >= minKnownSecretLength) out = out.split(secret).join('[redacted]');
  }
  for (const [pattern, replacement] of secretPatterns) out = out.replace(pattern, replacement);
  return out;
}
