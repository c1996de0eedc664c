import { z } from './zod';
import { timestamp, id } from './responseFields';

// The request bodies live in shared/ (the dashboard's forms validate with them too).
export { credentials, loginBody, tokenBody, resetBody, emailBody } from '../../shared/accountSchemas';

/** A Mailroom account as its owner sees it (never the password hash). */
export const userResponse = z
  .object({
    id,
    email: z.string(),
    emailVerified: z.boolean(),
    createdAt: timestamp,
  })
  .strict()
  .openapi('User');

/** POST /auth/signup: the account, signed in; `verificationEmailSent` false when the mail could not be queued. */
export const signupResponse = z.object({ user: userResponse, verificationEmailSent: z.boolean() }).strict();

export const loginResponse = z.object({ user: userResponse }).strict();

/** The plain `{ success: true }` of logout and a password reset. */
export const authSuccessResponse = z.object({ success: z.literal(true) }).strict();

/** No OAuth provider is implemented: the list is always empty. */
export const oauthConfigResponse = z.object({ providers: z.array(z.string()).max(0) }).strict();

export const verifyEmailResponse = z.object({ success: z.literal(true), user: userResponse }).strict();

export const requestVerificationResponse = z.object({ success: z.literal(true), alreadyVerified: z.boolean() }).strict();

export const requestPasswordResetResponse = z.object({ success: z.literal(true), message: z.string() }).strict();
