import type { FieldDefinition } from './fields.ts';
import type { WorkflowValue } from './validateValues.ts';

/** `{{ key }}`: the only template syntax. There is no escaping, nesting, logic or re-expansion. */
const placeholder = /\{\{\s*([A-Za-z][A-Za-z0-9_]{0,63})\s*\}\}/g;

/** The field keys a template refers to. */
export function templateKeys(template: string): string[] {
  return [...new Set([...template.matchAll(placeholder)].map((m) => m[1]!))];
}

function render(field: FieldDefinition | undefined, value: WorkflowValue | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (field?.type === 'file') return `[file ${value}]`;
  return String(value);
}

/**
 * The template with each placeholder replaced by its value, in one pass over the template only:
 * a value is inserted as plain text and never scanned again, so a value containing `{{other}}` (or
 * any other syntax) stays literal text. Used for the task's visible first message.
 */
export function fillTemplate(
  template: string,
  fields: FieldDefinition[],
  values: Record<string, WorkflowValue>,
): string {
  const byKey = new Map(fields.map((f) => [f.key, f]));
  return template.replace(placeholder, (_match, key: string) => render(byKey.get(key), values[key]));
}

/**
 * The template as instructions for the model: each placeholder becomes a reference to a field whose
 * value is supplied separately, as delimited data (see worker/reply/conversation.ts). Values are
 * therefore never spliced into the instructions the model follows.
 */
export function templateAsInstructions(template: string): string {
  return template.replace(placeholder, (_match, key: string) => `<value of field "${key}">`);
}
