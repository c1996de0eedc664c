import { proxyActivities } from '@temporalio/workflow';
import type { AccountEmailActivities, AccountEmailRequest } from '../activities/accountEmailActivities';
import type { IssueTokenResult } from '../db/repositories/userRepository';

const { issueAccountEmailToken, sendAccountEmail } = proxyActivities<AccountEmailActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes', maximumAttempts: 20 },
});

/**
 * One requested account mail (email verification or password reset), started by the API for
 * every request whether or not the address has an account, so the request costs the same either
 * way. The activity looks the account up, applies the per-account mail limit and issues the token;
 * only the token's row id travels through Temporal, the mailed token is derived from it with the
 * instance secret. Workflow id: `account-email-<requestId>` (a random id; the token gets the same id).
 */
export async function accountEmailRequestWorkflow(request: AccountEmailRequest): Promise<IssueTokenResult> {
  const issued = await issueAccountEmailToken(request);
  if (issued.issued) await sendAccountEmail(issued.tokenId);
  return issued;
}

/**
 * Delivers the mail of a token the API issued itself (how Mailroom worked before
 * accountEmailRequestWorkflow). Kept registered so runs started by an older API still finish.
 */
export async function accountEmailWorkflow(input: { tokenId: string }): Promise<void> {
  await sendAccountEmail(input.tokenId);
}
