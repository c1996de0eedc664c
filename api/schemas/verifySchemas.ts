import { z } from 'zod';

/**
 * The body is refused (422) only when `email` is missing, not a string or absurdly long: a string
 * that is not a well-formed address is a question with an answer (200, `valid: false`, a reason
 * saying what is wrong), as contract section 13 has it.
 */
export const verifyBody = z.object({
  email: z.string({ required_error: 'Email is required', invalid_type_error: 'Email must be a string' }).max(1000, 'Email must be at most 1000 characters'),
});
