/**
 * How every start of `inboundMessagesWorkflow` is named and placed: by the inbound listener's
 * reception (services/inbound/inboundReception.ts) and by the inbound sweep. Pure, so workflow
 * code uses it too: what it builds for the same inputs must never change.
 */
import type { SearchAttributePair } from '@temporalio/common';
import type { InboundMessagesInput } from '../workflows/inboundMessagesWorkflow';
import { ProjectIdSearchAttribute } from './searchAttributes';

/** Messages one processing workflow carries at most. */
export const MAX_MESSAGES_PER_INBOUND_WORKFLOW = 100;

/** A round's workflow, named after its first message: `inbound-<first messageId>`. */
export const inboundWorkflowId = (messageIds: string[]): string => `inbound-${messageIds[0]}`;

export interface InboundWorkflowStart {
  workflowId: string;
  taskQueue: string;
  args: [InboundMessagesInput];
  typedSearchAttributes: SearchAttributePair[];
}

/** The start options of one processing workflow; `projectId` is the project it is filed under. */
export function inboundWorkflowStart(input: { taskQueue: string; workflowId: string; projectId: string; messageIds: string[] }): InboundWorkflowStart {
  return {
    workflowId: input.workflowId,
    taskQueue: input.taskQueue,
    args: [{ messageIds: input.messageIds }],
    typedSearchAttributes: [{ key: ProjectIdSearchAttribute, value: input.projectId }],
  };
}
