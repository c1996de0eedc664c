import { proxyActivities } from '@temporalio/workflow';
import type { AccountEmailActivities } from '../activities/accountEmailActivities';

const { sendAccountEmail } = proxyActivities<AccountEmailActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes', maximumAttempts: 20 },
});

/**
 * Delivers one account mail (email verification or password reset). Only the token's row id
 * travels through Temporal: the activity derives the mailed token itself, so no secret ends up
 * in workflow history. Workflow id: `account-email-<tokenId>`.
 */
export async function accountEmailWorkflow(input: { tokenId: string }): Promise<void> {
  await sendAccountEmail(input.tokenId);
}
