import type { AppContext } from '../state';
import { ApiError } from '../../lib/errors';
import { clientAddressBudget, type AddressBudget } from '../../db/repositories/clientAddressBudget';
import { clientAddress } from './clientAddress';

/** The contract's 429 (section 2) for a client that used up a budget: `details.retryAfter` and `Retry-After`, in seconds. */
export function tooManyAttempts(message: string, retryAfter: number): ApiError {
  return new ApiError(429, 'RATE_LIMIT_EXCEEDED', message, {
    details: { retryAfter },
    headers: { 'Retry-After': String(retryAfter) },
    suggestion: `Retry after ${retryAfter} seconds`,
  });
}

/** Charges one request to the client address's budget; 429 once it is used up for the window. */
export async function spendAddressBudget(ctx: AppContext, budget: AddressBudget, message: string): Promise<void> {
  const admission = await clientAddressBudget.charge(ctx.state.em, budget, clientAddress(ctx));
  if (!admission.admitted) throw tooManyAttempts(message, admission.retryAfterSeconds);
}
