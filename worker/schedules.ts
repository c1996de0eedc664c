import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { hourlyCleanupWorkflow } from '../workflows';

/** Schedule ids derive from the task queue, so test workers on their own queues keep their own schedules. */
export function hourlyCleanupScheduleId(taskQueue: string): string {
  return `${taskQueue}-hourly-cleanup`;
}

/** Creates Mailroom's recurring schedules once; an existing schedule is left as it is. */
export async function ensureSchedules(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: hourlyCleanupScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 hour' }] },
      action: {
        type: 'startWorkflow',
        workflowType: hourlyCleanupWorkflow,
        workflowId: `${taskQueue}-hourly-cleanup-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '30 minutes',
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
