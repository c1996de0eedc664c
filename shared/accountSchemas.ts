import { z } from 'zod';
import { emailAddress } from './zodFields';

/**
 * The account request bodies (sign up, log in, tokens, password resets): the API parses with them
 * (api/schemas/authSchemas.ts re-exports them) and the dashboard's forms validate with them, so a
 * field is refused with the same message in both places.
 */

/** Kept from the bcrypt days (bcrypt reads at most 72 bytes): longer passwords are refused, not truncated. */
export const MAX_PASSWORD_BYTES = 72;

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

const password = z
  .string({ required_error: 'Password is required' })
  .min(8, 'Password must be at least 8 characters')
  .refine((p) => utf8Length(p) <= MAX_PASSWORD_BYTES, { message: `Password must be at most ${MAX_PASSWORD_BYTES} bytes` });

export const credentials = z.object({ email: emailAddress, password });

export const loginBody = z.object({
  email: emailAddress,
  password: z.string({ required_error: 'Password is required' }).min(1, 'Password is required').max(1024),
});

export const tokenBody = z.object({ token: z.string({ required_error: 'Token is required' }).min(1).max(200) });

export const resetBody = z.object({ token: z.string({ required_error: 'Token is required' }).min(1).max(200), password });

export const emailBody = z.object({ email: emailAddress });
