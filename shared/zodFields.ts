import { z, type ZodTypeAny } from 'zod';

/**
 * Field schemas whose messages name the field, shared by the request schemas (api/schemas/), the
 * step configs (services/automation/stepConfigs.ts) and the dashboard's forms (web/), so a field
 * reads the same wherever it is checked. Browser-safe like all of shared/: zod only.
 */

export const text = (field: string) => z.string({ required_error: `${field} is required`, invalid_type_error: `${field} must be a string` });

/** An optional text field: null or an empty string clears it. */
export const optional = <S extends ZodTypeAny>(schema: S) => z.preprocess((value) => (value === '' ? null : value), schema.nullable()).optional();

export const enumOf = <T extends readonly [string, ...string[]]>(field: string, values: T) =>
  z.enum(values, { errorMap: () => ({ message: `${field} must be one of ${values.join(', ')}` }) });

export const uuid = (field: string) =>
  text(field)
    .uuid(`${field} must be a UUID`)
    .transform((s) => s.toLowerCase());

export const finiteNumber = (field: string) =>
  z.number({ invalid_type_error: `${field} must be a number`, required_error: `${field} is required` }).finite(`${field} must be a finite number`);

/** Email addresses are stored trimmed and lower-cased; this is the one place that rule lives. */
export const emailAddress = z
  .string({ required_error: 'Email is required', invalid_type_error: 'Email must be a string' })
  .trim()
  .max(254)
  .email('Invalid email address')
  .transform((s) => s.toLowerCase());

/** Strings that may not carry control characters (names, subjects): CR/LF would break headers and logs. */
export const singleLineString = (max: number) =>
  z
    .string()
    // Checked before trimming: a value that arrives with CR/LF is refused, not quietly repaired.
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), { message: 'Must not contain control characters (such as CR or LF)' })
    .pipe(z.string().trim().min(1, 'Must not be empty').max(max, `Must be at most ${max} characters`));
