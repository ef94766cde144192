import { describe, expect, it } from '@jest/globals';

import { parseFieldDefinitions } from '../../shared/workflows/fields.ts';
import { fillTemplate, templateAsInstructions, templateKeys } from '../../shared/workflows/template.ts';
import { checkWorkflowValues } from '../../shared/workflows/validateValues.ts';

const fields = parseFieldDefinitions([
  { key: 'title', type: 'text', required: true, minLength: 2, maxLength: 5 },
  { key: 'body', type: 'long_text' },
  { key: 'n', type: 'number', min: 0, max: 1 },
  { key: 'ok', type: 'boolean', required: true },
  { key: 'pick', type: 'select', options: ['a', 'b'] },
  { key: 'day', type: 'date', min: '2020-01-01' },
  { key: 'doc', type: 'file' },
]);

/** The issues checkWorkflowValues reports, in order: each field's path under `values`, with its message. */
const issuesOf = (expected: [field: string, message: string][]) =>
  expected.map(([field, message]) => ({ path: `values.${field}`, message }));

describe('field definitions', () => {
  it('applies defaults and refuses malformed definitions', () => {
    expect(fields[1]).toMatchObject({ type: 'long_text', maxLength: 50_000, required: false });
    for (const bad of [
      [{ key: '1x', type: 'text' }],
      [{ key: 'x', type: 'text', extra: true }],
      [{ key: 'x', type: 'select', options: ['a', 'a'] }],
      [{ key: 'x', type: 'date', min: '2020-02-30' }],
      [{ key: 'x', type: 'text', minLength: 9, maxLength: 3 }],
      { key: 'x', type: 'text' },
    ]) {
      expect(() => parseFieldDefinitions(bad)).toThrow();
    }
  });
});

describe('checkWorkflowValues', () => {
  it('accepts good values and leaves absent optional fields out', () => {
    const good = { title: 'Hey', ok: false, n: 0.5, pick: 'b', day: '2024-02-29', doc: 'file_1' };
    const check = checkWorkflowValues(fields, { ...good, body: null });
    expect(check.issues).toEqual([]);
    expect(check.values).toEqual(good);
    expect(check.fileRefs).toEqual([{ key: 'doc', fileId: 'file_1' }]);
  });

  it('reports one issue per offending field', () => {
    const check = checkWorkflowValues(fields, {
      title: 'x',
      n: 2,
      pick: 'c',
      day: '2019-12-31',
      doc: 5,
      zzz: 1,
    });
    expect(check.issues).toEqual(
      issuesOf([
        ['zzz', 'is not a field of this workflow'],
        ['title', 'must be at least 2 characters'],
        ['n', 'must be at most 1'],
        ['ok', 'is required'],
        ['pick', 'must be one of: a, b'],
        ['day', 'must be on or after 2020-01-01'],
        ['doc', 'must be a file id'],
      ]),
    );
  });

  it('counts characters, not UTF-16 units', () => {
    expect(checkWorkflowValues(fields, { title: '😀😀😀😀😀', ok: true }).issues).toEqual([]);
    expect(checkWorkflowValues(fields, { title: '😀😀😀😀😀😀', ok: true }).issues).toHaveLength(1);
  });

  it('does not treat inherited keys as values', () => {
    const values = Object.create({ title: 'inherited' }) as Record<string, unknown>;
    values.ok = true;
    expect(checkWorkflowValues(fields, values).issues).toEqual([
      { path: 'values.title', message: 'is required' },
    ]);
  });
});

describe('templates', () => {
  it('fills in one pass: values are never expanded again', () => {
    const template = 'A {{title}} B {{ body }} C {{missing}}';
    expect(templateKeys(template)).toEqual(['title', 'body', 'missing']);
    expect(fillTemplate(template, fields, { title: '{{body}}', body: '$& $1 {{title}}' })).toBe(
      'A {{body}} B $& $1 {{title}} C ',
    );
    expect(fillTemplate('{{ok}}/{{doc}}', fields, { ok: true, doc: 'file_9' })).toBe('yes/[file file_9]');
  });

  it('turns placeholders into references for the model', () => {
    expect(templateAsInstructions('Write about {{title}}.')).toBe('Write about <value of field "title">.');
  });
});
