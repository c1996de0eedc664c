import { ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { InboundActivities } from '../activities/inboundActivities';
import { inboundMessagesWorkflow } from './inboundMessagesWorkflow';
import { inboundWorkflowStart } from '../temporal/inboundWorkflowStart';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { findUnprocessedInbound } = proxyActivities<InboundActivities>({
  startToCloseTimeout: '1 minute',
  retry: PERIODIC_ACTIVITY_RETRY,
});

/** Older than any normal path from the 250 to processing. */
const UNPROCESSED_FOR_SECONDS = 120;
const MESSAGES_PER_SWEEP = 5000;

/**
 * Started every minute by the `<taskQueue>-inbound-sweep` schedule: the listener stores a round
 * of messages and then starts their workflow, so a process that dies between the two (or a start
 * that failed) leaves stored mail nothing processes. This starts it under the id it was stored
 * with: one still running is left alone, and processing records each copy once anyway.
 */
export async function inboundSweepWorkflow(): Promise<{ started: number; alreadyRunning: number }> {
  const groups = await findUnprocessedInbound({ olderThanSeconds: UNPROCESSED_FOR_SECONDS, limit: MESSAGES_PER_SWEEP });
  let started = 0;
  let alreadyRunning = 0;
  for (const group of groups) {
    try {
      await startChild(inboundMessagesWorkflow, {
        ...inboundWorkflowStart({
          taskQueue: workflowInfo().taskQueue,
          workflowId: group.workflowId,
          projectId: group.projectId,
          messageIds: group.messageIds,
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
