import { patched, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { EmailDeliveryActivities } from '../activities/emailDeliveryActivities';

// Database or transport trouble inside the activity: keep trying; mail is never dropped for it.
const retry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } as const;

/** How deliveries started before LOCAL_DELIVERY_PATCH ran their attempts (kept so their histories replay). */
const taskQueueDelivery = proxyActivities<EmailDeliveryActivities>({
  // A wave of sends is recorded before the next, and each wave heartbeats: a worker killed
  // mid-attempt is noticed within the heartbeat timeout and the attempt resumes elsewhere.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry,
});
/**
 * Attempts run as local activities, inside the workflow task: a delivery costs Temporal one
 * workflow task instead of a workflow task, an activity task and a second workflow task, which
 * is most of what the Temporal server spends on a send. A worker killed mid-attempt is noticed
 * when its workflow task times out (10 s), and the attempt runs again elsewhere under the same
 * claim owner, so it resumes with the wave in flight.
 */
const localDelivery = proxyLocalActivities<EmailDeliveryActivities>({ startToCloseTimeout: '10 minutes', retry });
const LOCAL_DELIVERY_PATCH = 'delivery-attempts-as-local-activities';

export interface EmailDeliveryInput {
  projectId: string;
  /** Recorded emails (QUEUED); ids only, the content stays in PostgreSQL. */
  emailIds: string[];
  /** Waits between attempts after temporary failures (DELIVERY_RETRY_DELAYS); their count is the retry budget. */
  retryDelaysSeconds: number[];
}

export interface EmailDeliverySummary {
  sent: number;
  failed: number;
  suppressed: number;
  attempts: number;
}

/**
 * Delivers recorded emails: `send-<emailId>` for one email, `deliver-<first emailId>` for a batch,
 * `send-<first emailId>` for an automation execution's retries (temporal/deliveryWorkflowIds.ts;
 * contract section 14; which shape runs and why: docs/decisions.md, "Sending", "Delivery workflows
 * carry batches"). An attempt sends every email still to send; those that failed temporarily
 * (SMTP 4xx, the relay unreachable) wait out the next delay and go again, until the delays are
 * spent and they are marked FAILED. A permanent refusal (5xx) is final at once.
 */
export async function emailDeliveryWorkflow(input: EmailDeliveryInput): Promise<EmailDeliverySummary> {
  const { deliverEmails, failUndeliveredEmails } = patched(LOCAL_DELIVERY_PATCH) ? localDelivery : taskQueueDelivery;
  const summary: EmailDeliverySummary = { sent: 0, failed: 0, suppressed: 0, attempts: 0 };
  let pending = input.emailIds;
  for (;;) {
    const attempt = await deliverEmails({ emailIds: pending });
    summary.attempts++;
    summary.sent += attempt.sent;
    summary.failed += attempt.failed;
    summary.suppressed += attempt.suppressed;
    pending = attempt.retry;
    if (!pending.length) return summary;
    const delay = input.retryDelaysSeconds[summary.attempts - 1];
    if (delay === undefined) {
      await failUndeliveredEmails({ emailIds: pending, reason: `Delivery failed temporarily ${summary.attempts} times; giving up` });
      summary.failed += pending.length;
      return summary;
    }
    await sleep(delay * 1000);
  }
}
