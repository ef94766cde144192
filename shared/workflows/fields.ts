import { z } from 'zod';

/** A field key: how values name the field and how the prompt template refers to it (`{{key}}`). */
export const fieldKey = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'must start with a letter; letters, digits and _ only, up to 64');

const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date as YYYY-MM-DD')
  .refine(isCalendarDate, 'is not a calendar date');

const base = {
  key: fieldKey,
  label: z.string().min(1).max(200).optional(),
  description: z.string().max(2000).optional(),
  required: z.boolean().default(false),
};

/** Longest value a text field may take: the spec's task input limit. */
export const maxTextLength = 50_000;

const textField = z
  .object({
    ...base,
    type: z.literal('text'),
    minLength: z.int().min(0).max(maxTextLength).optional(),
    maxLength: z.int().min(1).max(maxTextLength).default(1000),
  })
  .strict();

const longTextField = z
  .object({
    ...base,
    type: z.literal('long_text'),
    minLength: z.int().min(0).max(maxTextLength).optional(),
    maxLength: z.int().min(1).max(maxTextLength).default(maxTextLength),
  })
  .strict();

const numberField = z
  .object({
    ...base,
    type: z.literal('number'),
    integer: z.boolean().default(false),
    min: z.number().optional(),
    max: z.number().optional(),
  })
  .strict();

const booleanField = z.object({ ...base, type: z.literal('boolean') }).strict();

const selectField = z
  .object({
    ...base,
    type: z.literal('select'),
    options: z
      .array(z.string().min(1).max(200))
      .min(1)
      .max(200)
      .refine((o) => new Set(o).size === o.length, 'options must be distinct'),
  })
  .strict();

const dateField = z
  .object({ ...base, type: z.literal('date'), min: isoDate.optional(), max: isoDate.optional() })
  .strict();

const fileField = z.object({ ...base, type: z.literal('file') }).strict();

export const fieldDefinition = z
  .discriminatedUnion('type', [
    textField,
    longTextField,
    numberField,
    booleanField,
    selectField,
    dateField,
    fileField,
  ])
  .superRefine((field, ctx) => {
    const bounds =
      field.type === 'text' || field.type === 'long_text'
        ? [field.minLength, field.maxLength]
        : field.type === 'number' || field.type === 'date'
          ? [field.min, field.max]
          : [];
    const [low, high] = bounds;
    if (low !== undefined && high !== undefined && low > high) {
      ctx.addIssue({
        code: 'custom',
        message: `field '${field.key}': the lower bound is above the upper bound`,
      });
    }
  });

export type FieldDefinition = z.infer<typeof fieldDefinition>;
export type FieldType = FieldDefinition['type'];

/** A workflow's stored field list: up to 100 fields with distinct keys. */
export const fieldDefinitions = z
  .array(fieldDefinition)
  .max(100)
  .superRefine((fields, ctx) => {
    const seen = new Set<string>();
    for (const field of fields) {
      if (seen.has(field.key)) {
        ctx.addIssue({ code: 'custom', message: `field key '${field.key}' is used twice` });
      }
      seen.add(field.key);
    }
  });

/**
 * Parses field definitions (from the operator CLI or the stored row).
 * @throws Error listing every problem when the definitions are not valid.
 */
export function parseFieldDefinitions(raw: unknown): FieldDefinition[] {
  const parsed = fieldDefinitions.safeParse(raw);
  if (!parsed.success) {
    throw new Error(
      parsed.error.issues
        .map((i) => `${i.path.length ? `fields.${i.path.join('.')}: ` : ''}${i.message}`)
        .join('; '),
    );
  }
  return parsed.data;
}

/** `2024-02-30` matches the pattern but is no day of any calendar. */
export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
