import { proxyActivities } from '@temporalio/workflow';
import type { AutomationExecutionSweepActivities } from '../activities/automationExecutionSweepActivities';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { sweepExecutions } = proxyActivities<AutomationExecutionSweepActivities>({
  startToCloseTimeout: '4 minutes',
  heartbeatTimeout: '1 minute',
  retry: PERIODIC_ACTIVITY_RETRY,
});

/**
 * Started every minute by the `<taskQueue>-execution-sweep` schedule: an API process (or worker)
 * that dies between recording an event and starting or signalling the executions it concerns
 * leaves work nothing else picks up; this finds it (sweepExecutions).
 */
export async function workflowExecutionSweepWorkflow(): Promise<{ created: number; started: number; signalled: number }> {
  return sweepExecutions();
}
