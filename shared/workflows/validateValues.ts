import type { Issue } from '../errors/appError.ts';
import { type FieldDefinition, isCalendarDate } from './fields.ts';

export type WorkflowValue = string | number | boolean;

export type ValuesCheck = {
  /** The accepted values, one per field that was given (optional fields left out stay out). */
  values: Record<string, WorkflowValue>;
  /** Ids given to file fields, still to be checked against the workspace's files. */
  fileRefs: { key: string; fileId: string }[];
  issues: Issue[];
};

const codePoints = (s: string) => [...s].length;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** One field's problem, or undefined when the value fits (the value is known to be present). */
function checkValue(field: FieldDefinition, value: unknown): string | undefined {
  switch (field.type) {
    case 'text':
    case 'long_text': {
      if (typeof value !== 'string') return `must be a string, not ${describe(value)}`;
      const length = codePoints(value);
      if (field.required && value.trim() === '') return 'is required and may not be blank';
      if (field.minLength !== undefined && length < field.minLength) {
        return `must be at least ${field.minLength} characters`;
      }
      if (length > field.maxLength) return `must be at most ${field.maxLength} characters`;
      return undefined;
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        return `must be a number, not ${describe(value)}`;
      }
      if (field.integer && !Number.isInteger(value)) return 'must be a whole number';
      if (field.min !== undefined && value < field.min) return `must be at least ${field.min}`;
      if (field.max !== undefined && value > field.max) return `must be at most ${field.max}`;
      return undefined;
    }
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `must be true or false, not ${describe(value)}`;
    case 'select':
      if (typeof value !== 'string') return `must be a string, not ${describe(value)}`;
      return field.options.includes(value) ? undefined : `must be one of: ${field.options.join(', ')}`;
    case 'date':
      if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) {
        return 'must be a date as YYYY-MM-DD';
      }
      if (!isCalendarDate(value)) return 'is not a calendar date';
      // ISO dates of equal length compare as strings in calendar order.
      if (field.min !== undefined && value < field.min) return `must be on or after ${field.min}`;
      if (field.max !== undefined && value > field.max) return `must be on or before ${field.max}`;
      return undefined;
    case 'file':
      if (typeof value !== 'string' || value.length === 0 || value.length > 200) return 'must be a file id';
      return undefined;
    default: {
      const never: never = field;
      throw new Error(`unknown field type ${String((never as FieldDefinition).type)}`);
    }
  }
}

/**
 * Checks run values against a workflow's stored fields: unknown keys, missing required fields,
 * wrong types, bounds, select options and dates. Collects every problem, one issue per field
 * (path `values.<key>`), rather than stopping at the first. File ids are checked by the caller.
 */
export function checkWorkflowValues(fields: FieldDefinition[], raw: Record<string, unknown>): ValuesCheck {
  const issues: Issue[] = [];
  const values: Record<string, WorkflowValue> = {};
  const fileRefs: ValuesCheck['fileRefs'] = [];
  const known = new Map(fields.map((f) => [f.key, f]));
  for (const key of Object.keys(raw)) {
    if (!known.has(key)) issues.push({ path: `values.${key}`, message: 'is not a field of this workflow' });
  }
  for (const field of fields) {
    const value = Object.hasOwn(raw, field.key) ? raw[field.key] : undefined;
    if (value === undefined || value === null) {
      if (field.required) issues.push({ path: `values.${field.key}`, message: 'is required' });
      continue;
    }
    const problem = checkValue(field, value);
    if (problem !== undefined) {
      issues.push({ path: `values.${field.key}`, message: problem });
      continue;
    }
    values[field.key] = value as WorkflowValue;
    if (field.type === 'file') fileRefs.push({ key: field.key, fileId: value as string });
  }
  return { values, fileRefs, issues };
}
