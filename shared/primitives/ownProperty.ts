/**
 * Sets `key` on `target` as an own enumerable data property, as JSON.parse makes every key. A plain
 * assignment does that for every name but `__proto__`, which instead replaces the target's prototype:
 * the value would vanish from JSON.stringify, Object.keys and every size or depth count of the
 * object, yet still be read through it (`target.input`). Use it wherever a key a caller chose is
 * copied into a new object.
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}
