import { z } from 'zod';

/** Strings that may not carry control characters (names, subjects): CR/LF would break headers and logs. */
export const singleLineString = (max: number) =>
  z
    .string()
    // Checked before trimming: a value that arrives with CR/LF is refused, not quietly repaired.
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), { message: 'Must not contain control characters (such as CR or LF)' })
    .pipe(z.string().trim().min(1).max(max));

/** Email addresses are stored trimmed and lower-cased; this is the one place that rule lives. */
export const emailAddress = z
  .string({ required_error: 'Email is required', invalid_type_error: 'Email must be a string' })
  .trim()
  .max(254)
  .email('Invalid email address')
  .transform((s) => s.toLowerCase());
