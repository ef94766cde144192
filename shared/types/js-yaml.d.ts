/** The part of js-yaml the api uses (the package ships no types of its own). */
declare module 'js-yaml' {
  export const CORE_SCHEMA: unknown;
  export function load(text: string, options?: { schema?: unknown; filename?: string }): unknown;
}
