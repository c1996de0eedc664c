/**
 * How an endpoint's delivery workflow is named, woken and cancelled (contract 18): one workflow per
 * endpoint, `webhook-endpoint-<id>`, on the main task queue (its activity on the webhook one),
 * found in the Temporal UI by ProjectId.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { webhookDeliveryWorkflow } from '../workflows/webhookDeliveryWorkflow';
import type { TemporalHandle } from './client';
import { ProjectIdSearchAttribute } from './searchAttributes';

export function webhookDeliveryWorkflowId(endpointId: string): string {
  return `webhook-endpoint-${endpointId}`;
}

/**
 * Signals the endpoint's workflow that messages are due, starting it when none runs (a new
 * endpoint, one re-enabled, or one whose workflow ended): Temporal's signal-with-start does both in
 * one call, so there is never a second workflow for an endpoint.
 */
export async function wakeWebhookDelivery(client: Client, taskQueue: string, endpoint: { endpointId: string; projectId: string }): Promise<void> {
  await client.workflow.signalWithStart<typeof webhookDeliveryWorkflow, []>('webhookDeliveryWorkflow', {
    workflowId: webhookDeliveryWorkflowId(endpoint.endpointId),
    taskQueue,
    args: [{ endpointId: endpoint.endpointId, projectId: endpoint.projectId }],
    signal: 'wake',
    signalArgs: [],
    typedSearchAttributes: [{ key: ProjectIdSearchAttribute, value: endpoint.projectId }],
  });
}

/**
 * Cancels the endpoint's workflow (a delete or a disable): its running attempt stops at its next
 * heartbeat and nothing more is sent. None running is fine. Throws when Temporal cannot be reached;
 * the caller has already changed the endpoint, which the workflow also checks before every round.
 */
export async function cancelWebhookDelivery(temporal: TemporalHandle, endpointId: string): Promise<void> {
  try {
    await temporal.within(() => temporal.client.workflow.getHandle(webhookDeliveryWorkflowId(endpointId)).cancel());
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
