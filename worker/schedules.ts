import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import {
  billingUsageReportWorkflow,
  domainRecheckWorkflow,
  emailDeliverySweepWorkflow,
  hourlyCleanupWorkflow,
  inboundSweepWorkflow,
  trackedSegmentsRecomputeWorkflow,
  workflowExecutionSweepWorkflow,
} from '../workflows';

/** Schedule ids derive from the task queue, so test workers on their own queues keep their own schedules. */
export function hourlyCleanupScheduleId(taskQueue: string): string {
  return `${taskQueue}-hourly-cleanup`;
}

export function domainRecheckScheduleId(taskQueue: string): string {
  return `${taskQueue}-domain-recheck`;
}

export function deliverySweepScheduleId(taskQueue: string): string {
  return `${taskQueue}-delivery-sweep`;
}

export function segmentRecomputeScheduleId(taskQueue: string): string {
  return `${taskQueue}-segment-recompute`;
}

export function billingUsageReportScheduleId(taskQueue: string): string {
  return `${taskQueue}-billing-usage-report`;
}

export function inboundSweepScheduleId(taskQueue: string): string {
  return `${taskQueue}-inbound-sweep`;
}

export function executionSweepScheduleId(taskQueue: string): string {
  return `${taskQueue}-execution-sweep`;
}

/** Creates Mailroom's recurring schedules once each; an existing schedule is left as it is. */
export async function ensureSchedules(client: Client, taskQueue: string): Promise<void> {
  const schedules: ScheduleOptions[] = [
    {
      // Counters, spent attachments, and the retention rules (services/retention/retentionRules.ts):
      // hourly, so each pass has an hour's worth to remove, never a day's.
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
    },
    {
      // Pending domains are noticed within 5 minutes of their record appearing; verified ones
      // lose their status within 5 minutes of it disappearing (contract section 8).
      scheduleId: domainRecheckScheduleId(taskQueue),
      spec: { intervals: [{ every: '5 minutes' }] },
      action: {
        type: 'startWorkflow',
        workflowType: domainRecheckWorkflow,
        workflowId: `${taskQueue}-domain-recheck-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '15 minutes',
      },
      // A missed run is not worth catching up on: the next one checks everything anyway.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    },
    {
      // Accepted mail whose delivery never started (an API process died in between) leaves
      // within about three minutes of acceptance.
      scheduleId: deliverySweepScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 minute' }] },
      action: {
        type: 'startWorkflow',
        workflowType: emailDeliverySweepWorkflow,
        workflowId: `${taskQueue}-delivery-sweep-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '5 minutes',
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    },
    {
      // Tracked segments follow events and contact writes within seconds; this run catches what
      // time alone changes ("triggered within 7 days") within 5 minutes.
      scheduleId: segmentRecomputeScheduleId(taskQueue),
      spec: { intervals: [{ every: '5 minutes' }] },
      action: {
        type: 'startWorkflow',
        workflowType: trackedSegmentsRecomputeWorkflow,
        workflowId: `${taskQueue}-segment-recompute-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '15 minutes',
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    },
    {
      // Usage reaches Stripe within the hour; with billing off the run finds nothing to do.
      scheduleId: billingUsageReportScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 hour' }] },
      action: {
        type: 'startWorkflow',
        workflowType: billingUsageReportWorkflow,
        workflowId: `${taskQueue}-billing-usage-report-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '50 minutes',
      },
      // What a missed run would have reported, the next one reports: the watermark is in the database.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
    },
    {
      // Executions whose start or event signal a dying process never sent go out within about
      // a minute and a half of the event.
      scheduleId: executionSweepScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 minute' }] },
      action: {
        type: 'startWorkflow',
        workflowType: workflowExecutionSweepWorkflow,
        workflowId: `${taskQueue}-execution-sweep-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '5 minutes',
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    },
    {
      // Received mail whose processing never started (the listener's process died between the
      // commit and the start, or the start failed) is processed within about three minutes.
      scheduleId: inboundSweepScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 minute' }] },
      action: {
        type: 'startWorkflow',
        workflowType: inboundSweepWorkflow,
        workflowId: `${taskQueue}-inbound-sweep-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '5 minutes',
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    },
  ];
  for (const schedule of schedules) {
    try {
      await client.schedule.create(schedule);
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
  }
}
