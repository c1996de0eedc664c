import { z, type ZodTypeAny } from 'zod';

/**
 * Field schemas whose messages name the field, shared by the request schemas (api/schemas/) and
 * the step configs (services/automation/stepConfigs.ts), so a field reads the same wherever it is
 * checked.
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
