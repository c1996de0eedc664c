import { z } from './zod';
import { emailAddress } from './commonFields';
import { timestamp, id } from './responseFields';
import { MAX_PASSWORD_BYTES } from '../../lib/passwords';

const password = z
  .string({ required_error: 'Password is required' })
  .min(8, 'Password must be at least 8 characters')
  .refine((p) => Buffer.byteLength(p, 'utf8') <= MAX_PASSWORD_BYTES, { message: `Password must be at most ${MAX_PASSWORD_BYTES} bytes` });

export const credentials = z.object({ email: emailAddress, password });

export const loginBody = z.object({ email: emailAddress, password: z.string({ required_error: 'Password is required' }).min(1).max(1024) });

export const tokenBody = z.object({ token: z.string({ required_error: 'Token is required' }).min(1).max(200) });

export const resetBody = z.object({ token: z.string({ required_error: 'Token is required' }).min(1).max(200), password });

export const emailBody = z.object({ email: emailAddress });

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
