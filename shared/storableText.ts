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

const maxReported = 20;

/**
 * The dotted paths (`input.2`, `values.title`) of the strings and object keys in `value` that
 * PostgreSQL could not store: the first 20, enough to show the caller what to fix.
 */
export function unstorablePaths(value: unknown, path = ''): string[] {
  const found: string[] = [];
  const visit = (item: unknown, at: string): void => {
    if (found.length >= maxReported) return;
    const child = (key: string | number) => (at === '' ? String(key) : `${at}.${key}`);
    if (typeof item === 'string') {
      if (!isStorableText(item)) found.push(at);
    } else if (Array.isArray(item)) {
      item.forEach((element, i) => visit(element, child(i)));
    } else if (item !== null && typeof item === 'object') {
      for (const [key, element] of Object.entries(item)) {
        if (!isStorableText(key)) found.push(child(toStorableText(key)));
        else visit(element, child(key));
      }
    }
  };
  visit(value, path);
  return found.slice(0, maxReported);
}
