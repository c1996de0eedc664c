import { z } from './zod';

/**
 * The body is refused (422) only when `email` is missing, not a string or absurdly long: a string
 * that is not a well-formed address is a question with an answer (200, `valid: false`, a reason
 * saying what is wrong), as contract section 13 has it.
 */
export const verifyBody = z.object({
  email: z.string({ required_error: 'Email is required', invalid_type_error: 'Email must be a string' }).max(1000, 'Email must be at most 1000 characters'),
});

/** What POST /v1/verify answers: the checks of contract 13, each a boolean, and the reasons for `valid: false`. */
export const verifyResponse = z
  .object({
    success: z.literal(true),
    data: z.object({
      email: z.string(),
      valid: z.boolean(),
      isDisposable: z.boolean(),
      isAlias: z.boolean(),
      isTypo: z.boolean(),
      isPlusAddressed: z.boolean(),
      isPersonalEmail: z.boolean(),
      domainExists: z.boolean(),
      hasWebsite: z.boolean(),
      hasMxRecords: z.boolean(),
      reasons: z.array(z.string()),
      suggestedEmail: z.string().optional(),
    }),
  })
  .openapi('VerifyResult');
