import { ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { EmailDeliveryActivities } from '../activities/emailDeliveryActivities';
import { emailDeliveryWorkflow } from './emailDeliveryWorkflow';
import { deliveryWorkflowStart } from '../temporal/deliveryWorkflowStart';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { findUndeliveredEmails } = proxyActivities<EmailDeliveryActivities>({
  startToCloseTimeout: '1 minute',
  retry: PERIODIC_ACTIVITY_RETRY,
});

/** Older than any normal path from acceptance to the first attempt. */
const UNTOUCHED_FOR_SECONDS = 120;
const EMAILS_PER_SWEEP = 5000;

/**
 * Started every minute by the `<taskQueue>-delivery-sweep` schedule: the API records an email and
 * then starts its delivery, so an API process killed between the two leaves recorded mail that
 * nothing delivers. This finds such mail and starts its delivery workflow under the id the API
 * would have used: one already running is left alone, so mail is never delivered twice for it.
 */
export async function emailDeliverySweepWorkflow(): Promise<{ started: number; alreadyRunning: number }> {
  const { groups, retryDelaysSeconds } = await findUndeliveredEmails({ olderThanSeconds: UNTOUCHED_FOR_SECONDS, limit: EMAILS_PER_SWEEP });
  let started = 0;
  let alreadyRunning = 0;
  for (const group of groups) {
    try {
      // The id the email was recorded with (emailRepository.findUnattempted), so a delivery still running is found.
      await startChild(emailDeliveryWorkflow, {
        ...deliveryWorkflowStart({
          taskQueue: workflowInfo().taskQueue,
          workflowId: group.workflowId,
          projectId: group.projectId,
          emailIds: group.emailIds,
          retryDelaysSeconds,
        }),
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      started++;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      alreadyRunning++;
    }
  }
  return { started, alreadyRunning };
}
