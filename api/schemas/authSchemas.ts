import { z } from 'zod';
import { emailAddress } from './commonFields';
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
