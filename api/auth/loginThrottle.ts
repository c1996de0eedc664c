import type { AppContext } from '../state';
import { ApiError } from '../http/errors';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../../db/repositories/loginThrottleRepository';
import { clientAddress } from './clientAddress';

/** Charges this attempt; throws 429 RATE_LIMIT_EXCEEDED (with Retry-After) when the pair or the address is held off. */
export async function admitLoginAttempt(ctx: AppContext, email: string): Promise<{ email: string; address: string }> {
  const address = clientAddress(ctx);
  const admission = await loginThrottleRepository.admit(ctx.state.em, email, address, LOGIN_THROTTLE);
  if (!admission.admitted) {
    const retryAfter = admission.retryAfterSeconds;
    throw new ApiError(429, 'RATE_LIMIT_EXCEEDED', 'Too many failed sign-in attempts; try again later', {
      details: { retryAfter },
      headers: { 'Retry-After': String(retryAfter) },
      suggestion: `Retry after ${retryAfter} seconds`,
    });
  }
  return { email, address };
}

export async function loginSucceeded(ctx: AppContext, attempt: { email: string; address: string }): Promise<void> {
  await loginThrottleRepository.succeeded(ctx.state.em, attempt.email, attempt.address);
}
