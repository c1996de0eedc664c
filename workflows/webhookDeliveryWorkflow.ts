import { ActivityCancellationType, condition, continueAsNew, defineSignal, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WebhookDeliveryActivities } from '../activities/webhookDeliveryActivities';
import { webhookTaskQueue } from '../temporal/taskQueues';

export interface WebhookDeliveryInput {
  endpointId: string;
  projectId: string;
}

/** Sent when messages of the endpoint came due while the workflow waits (services/webhooks/webhookWakeups.ts). */
export const webhookWakeSignal = defineSignal('wake');

/** The run's activity, on the webhook task queue, whose own slots (WEBHOOK_DELIVERY_SLOTS) busy endpoints hold. */
function deliveryActivities() {
  return proxyActivities<WebhookDeliveryActivities>({
    taskQueue: webhookTaskQueue(workflowInfo().taskQueue),
    // One run delivers for at most a few minutes (services/webhooks/webhookDelivery.ts), then returns.
    startToCloseTimeout: '10 minutes',
    // A killed worker's run is taken up again within this long; its leased messages come due by themselves.
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
    // A cancelled workflow closes only once its run has stopped: closed means nothing more is sent.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
}

/** Long enough that an idle endpoint costs a handful of history events an hour. */
const LONGEST_SLEEP_MS = 60 * 60 * 1000;
/** Runs before the history is handed to a fresh run (about 10 events each). */
const RUNS_PER_HISTORY = 200;

/**
 * The one delivery loop of an outbound webhook endpoint (contract 18), id
 * `webhook-endpoint-<endpoint id>`, ProjectId search attribute, on the main task queue (its
 * workflow tasks are few); its activity runs on the webhook task queue. The messages and their state live
 * in PostgreSQL (`next_attempt_at`), not here: each activity run delivers what is due with the
 * endpoint's concurrency cap and returns when nothing is left for a while; the workflow then sleeps
 * until the next retry is due or a `wake` signal says new messages arrived, and continues as new
 * before its history grows. It ends when the endpoint is deleted or disabled; cancelling it (the API
 * does on delete and disable) stops delivery at once.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<'deleted' | 'disabled'> {
  const { deliverDueWebhookMessages } = deliveryActivities();
  let woken = false;
  setHandler(webhookWakeSignal, () => {
    woken = true;
  });
  for (let run = 0; run < RUNS_PER_HISTORY && !workflowInfo().continueAsNewSuggested; run++) {
    // Reset before the run: a wake arriving while it runs is kept for the sleep after it.
    woken = false;
    const result = await deliverDueWebhookMessages({ endpointId: input.endpointId });
    if (result.state === 'deleted' || result.state === 'disabled') return result.state;
    if (result.state === 'busy') continue;
    const dueInMs = result.nextAttemptAt === null ? LONGEST_SLEEP_MS : Date.parse(result.nextAttemptAt) - Date.now();
    if (dueInMs > 0) await condition(() => woken, Math.min(dueInMs, LONGEST_SLEEP_MS));
  }
  return continueAsNew<typeof webhookDeliveryWorkflow>(input);
}
