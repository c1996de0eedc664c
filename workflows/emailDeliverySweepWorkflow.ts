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

/**
 * Well past the normal path from commit to first attempt (the scheduler's gathering window of
 * 100 ms, a start, a workflow task: well under a second on a loaded machine), so the sweep rarely
 * meets a start still in progress; short enough that, with the schedule's period
 * (DELIVERY_SWEEP_EVERY in worker/schedules.ts), mail whose start never came leaves within 30 s of
 * its commit (docs/decisions.md, "Answering /v1/send on commit").
 */
export const DELIVERY_SWEEP_AFTER_SECONDS = 15;
const EMAILS_PER_SWEEP = 5000;

/**
 * Started every 5 seconds by the `<taskQueue>-delivery-sweep` schedule: /v1/send and the relay
 * answer once their emails are committed and start the delivery afterwards, so a start that failed
 * (Temporal away), was left over a bound, or never came (the API process killed in between)
 * leaves recorded mail that nothing delivers. This finds such mail and starts its delivery
 * workflow under the id recorded with it, the one the API starts: one already running is left
 * alone, a start of the API's arriving later is refused, and an email a run already claimed or
 * sent is not sent again, so mail is never delivered twice for it.
 */
export async function emailDeliverySweepWorkflow(): Promise<{ started: number; alreadyRunning: number }> {
  const { groups, retryDelaysSeconds } = await findUndeliveredEmails({ olderThanSeconds: DELIVERY_SWEEP_AFTER_SECONDS, limit: EMAILS_PER_SWEEP });
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
