import { z } from 'zod';

/** Strings that may not carry control characters (names, subjects): CR/LF would break headers and logs. */
export const singleLineString = (max: number) =>
  z
    .string()
    // Checked before trimming: a value that arrives with CR/LF is refused, not quietly repaired.
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), { message: 'Must not contain control characters (such as CR or LF)' })
    .pipe(z.string().trim().min(1).max(max));

/** Every request schema takes addresses by the one rule (lib/zodFields.ts). */
export { emailAddress } from '../../lib/zodFields';
