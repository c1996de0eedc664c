import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { msToNumber, type Duration } from '@temporalio/common/lib/time';
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

/** The delivery sweep's period (see emailDeliverySweepWorkflow's DELIVERY_SWEEP_AFTER_SECONDS). */
export const DELIVERY_SWEEP_EVERY = '5 seconds';

/**
 * Creates Mailroom's recurring schedules once each. An existing schedule is left as it is, but for
 * its period: one created by an earlier version with another period (the delivery sweep's was a
 * minute) is brought to this one, keeping its state (paused or not, its note).
 */
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
      // Committed mail whose delivery never started (the start failed while Temporal was away, or
      // the API process died in between) leaves within DELIVERY_SWEEP_AFTER_SECONDS (15 s) plus
      // this period (5 s) and the schedule's jitter (up to 1 s) of its commit, or of Temporal
      // coming back: within 30 s (docs/decisions.md, "Answering /v1/send on commit").
      scheduleId: deliverySweepScheduleId(taskQueue),
      spec: { intervals: [{ every: DELIVERY_SWEEP_EVERY }] },
      action: {
        type: 'startWorkflow',
        workflowType: emailDeliverySweepWorkflow,
        workflowId: `${taskQueue}-delivery-sweep-run`,
        taskQueue,
        args: [],
        workflowExecutionTimeout: '5 minutes',
      },
      // Temporal's least window: after an outage one run catches up, the next comes on time.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '10 seconds' },
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
      await keepPeriod(client, schedule);
    }
  }
}

/** Brings an existing schedule to the declared period (and with it the declared action and policies). */
async function keepPeriod(client: Client, schedule: ScheduleOptions): Promise<void> {
  const handle = client.schedule.getHandle(schedule.scheduleId);
  const periods = (spec: { intervals?: Array<{ every: Duration }> } | undefined) => (spec?.intervals ?? []).map((i) => msToNumber(i.every)).join();
  if (periods((await handle.describe()).spec) === periods(schedule.spec)) return;
  await handle.update((previous) => ({
    spec: schedule.spec,
    action: schedule.action,
    policies: schedule.policies,
    state: { paused: previous.state.paused, note: previous.state.note, remainingActions: previous.state.remainingActions },
  }));
}
