import type { AppContext } from '../state';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../../db/repositories/loginThrottleRepository';
import { clientAddress } from './clientAddress';
import { tooManyAttempts } from './addressBudget';

/** Charges this attempt; throws 429 RATE_LIMIT_EXCEEDED (with Retry-After) when the pair or the address is held off. */
export async function admitLoginAttempt(ctx: AppContext, email: string): Promise<{ email: string; address: string }> {
  const address = clientAddress(ctx);
  const admission = await loginThrottleRepository.admit(ctx.state.em, email, address, LOGIN_THROTTLE);
  if (!admission.admitted) throw tooManyAttempts('Too many failed sign-in attempts; try again later', admission.retryAfterSeconds);
  return { email, address };
}

export async function loginSucceeded(ctx: AppContext, attempt: { email: string; address: string }): Promise<void> {
  await loginThrottleRepository.succeeded(ctx.state.em, attempt.email, attempt.address);
}
