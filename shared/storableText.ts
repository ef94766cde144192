// PostgreSQL text cannot hold U+0000, and jsonb also refuses unpaired UTF-16 surrogates (which JSON
// and URLs can carry): such input is refused at the edge, so it never reaches a query as a 500.

export const unstorableMessage = 'must not contain U+0000 or unpaired UTF-16 surrogates';

export function isStorableText(value: string): boolean {
  return value.isWellFormed() && !value.includes('\u0000');
}

/** The same text with every character PostgreSQL refuses replaced by U+FFFD. */
export function toStorableText(value: string): string {
  return isStorableText(value) ? value : value.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

/**
 * The dotted paths (`input.2`, `values.title`) of every string or object key in `value` that
 * PostgreSQL could not store.
 */
export function unstorablePaths(value: unknown, path = ''): string[] {
  const found: string[] = [];
  const at = (key: string | number) => (path === '' ? String(key) : `${path}.${key}`);
  if (typeof value === 'string') {
    if (!isStorableText(value)) found.push(path);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => found.push(...unstorablePaths(item, at(i))));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (!isStorableText(key)) found.push(at(toStorableText(key)));
      else found.push(...unstorablePaths(item, at(key)));
    }
  }
  return found;
}
