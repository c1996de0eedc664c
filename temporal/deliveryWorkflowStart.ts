/**
 * How every start of `emailDeliveryWorkflow` is named and placed: by the API's scheduler
 * (services/sending/deliveryScheduler.ts), a campaign's and an automation's retries and the
 * delivery sweep (workflows/). Pure (ids, task queue, search attributes), so workflow code uses it
 * too: what it builds for the same inputs must never change, or recorded histories stop replaying.
 */
import type { SearchAttributePair } from '@temporalio/common';
import type { EmailDeliveryInput } from '../workflows/emailDeliveryWorkflow';
import { deliveryTaskQueue } from './taskQueues';
import { CampaignIdSearchAttribute, ContactIdSearchAttribute, EmailIdsSearchAttribute, ProjectIdSearchAttribute } from './searchAttributes';

import { MAX_EMAILS_PER_DELIVERY, SEARCH_ATTRIBUTE_VALUE_MAX_BYTES } from './deliveryChunks';

export { campaignWorkflowId, deliveryWorkflowIds } from './deliveryWorkflowIds';
export { MAX_EMAILS_PER_DELIVERY, deliveryChunks } from './deliveryChunks';

export interface DeliveryWorkflowStartInput {
  /** The starter's (main) task queue; delivery runs on its delivery queue. */
  taskQueue: string;
  workflowId: string;
  projectId: string;
  emailIds: string[];
  retryDelaysSeconds: number[];
  /** Named in the CampaignId search attribute when given. */
  campaignId?: string | null;
  /** Named in the ContactId search attribute when given. */
  contactId?: string | null;
}

export interface DeliveryWorkflowStart {
  workflowId: string;
  taskQueue: string;
  args: [EmailDeliveryInput];
  typedSearchAttributes: SearchAttributePair[];
}

/**
 * The start options of one delivery workflow; the caller adds its own policies (parent close,
 * id reuse). Search attributes in a fixed order: ProjectId, CampaignId, ContactId, EmailIds.
 */
export function deliveryWorkflowStart(input: DeliveryWorkflowStartInput): DeliveryWorkflowStart {
  // A caller that did not cut its emails (deliveryChunks) learns it here, not from Temporal's
  // refusal after the emails were recorded. The test is the size itself (ids are ASCII), not
  // MAX_EMAILS_PER_DELIVERY: runs recorded before the cut replay their 51- and 52-id starts.
  const emailIdsBytes = JSON.stringify(input.emailIds).length;
  if (emailIdsBytes > SEARCH_ATTRIBUTE_VALUE_MAX_BYTES) {
    throw new Error(
      `${input.emailIds.length} email ids (${emailIdsBytes} bytes) pass the ${SEARCH_ATTRIBUTE_VALUE_MAX_BYTES}-byte search attribute limit: ` +
        `a delivery workflow carries at most ${MAX_EMAILS_PER_DELIVERY} emails (deliveryChunks)`,
    );
  }
  return {
    workflowId: input.workflowId,
    taskQueue: deliveryTaskQueue(input.taskQueue),
    args: [{ projectId: input.projectId, emailIds: input.emailIds, retryDelaysSeconds: input.retryDelaysSeconds }],
    typedSearchAttributes: [
      { key: ProjectIdSearchAttribute, value: input.projectId },
      ...(input.campaignId ? [{ key: CampaignIdSearchAttribute, value: input.campaignId }] : []),
      ...(input.contactId ? [{ key: ContactIdSearchAttribute, value: input.contactId }] : []),
      // Every email id of the workflow: at most MAX_EMAILS_PER_DELIVERY, so the value always fits.
      { key: EmailIdsSearchAttribute, value: input.emailIds },
    ],
  };
}
