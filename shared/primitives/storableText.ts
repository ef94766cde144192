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

type Node = { value: unknown; depth: number; parent: Node | undefined; key: string; badKey?: boolean };

const pathOf = (node: Node): string => {
  const keys: string[] = [];
  for (let at: Node | undefined = node; at?.parent; at = at.parent) keys.push(at.key);
  return keys.reverse().join('.');
};

/**
 * One pass over parsed JSON (or a query object), without recursion: whether arrays and objects
 * nest deeper than `maxDepth` (the walk stops there), and the dotted paths (`input.2`,
 * `values.title`) of the first 20 strings and object keys PostgreSQL could not store, in document
 * order. Paths are only built for what is reported, so a clean value costs one visit per node.
 */
export function inspectJson(value: unknown, maxDepth = Infinity): { tooDeep: boolean; unstorable: string[] } {
  const unstorable: string[] = [];
  const stack: Node[] = [{ value, depth: 0, parent: undefined, key: '' }];
  while (stack.length > 0 && unstorable.length < maxReported) {
    const node = stack.pop()!;
    const item = node.value;
    if (node.badKey || (typeof item === 'string' && !isStorableText(item))) {
      unstorable.push(pathOf(node));
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    if (node.depth >= maxDepth) return { tooDeep: true, unstorable };
    const entries = Array.isArray(item) ? item.map((v, i) => [String(i), v] as const) : Object.entries(item);
    // Pushed last to first, so they are visited (and reported) in document order.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const badKey = !Array.isArray(item) && !isStorableText(key);
      stack.push({
        value: child,
        depth: node.depth + 1,
        parent: node,
        key: badKey ? toStorableText(key) : key,
        badKey,
      });
    }
  }
  return { tooDeep: false, unstorable };
}
