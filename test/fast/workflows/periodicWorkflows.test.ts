import crypto from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { AutomationExecutionSweepActivities } from '../../../activities/automationExecutionSweepActivities';
import type { BillingActivities } from '../../../activities/billingActivities';
import type { CleanupActivities } from '../../../activities/cleanupActivities';
import type { DomainActivities } from '../../../activities/domainActivities';
import type { EmailDeliveryActivities } from '../../../activities/emailDeliveryActivities';
import type { InboundActivities } from '../../../activities/inboundActivities';
import type { SegmentActivities } from '../../../activities/segmentActivities';
import { startFastTemporal, type FastTemporal } from '../support/temporalEnvironment';
import { DELIVERY_SWEEP_AFTER_SECONDS } from '../../../workflows/emailDeliverySweepWorkflow';

/**
 * The workflows the worker's schedules start (worker/schedules.ts): the hourly clean-up, the
 * domain recheck, the tracked segments' recompute, the execution sweep, the billing usage report
 * and the two sweeps that start what a dying process left (deliveries, inbound processing).
 */
type Activities = CleanupActivities &
  DomainActivities &
  SegmentActivities &
  AutomationExecutionSweepActivities &
  BillingActivities &
  Pick<EmailDeliveryActivities, 'findUndeliveredEmails'> &
  Pick<InboundActivities, 'findUnprocessedInbound' | 'processInboundMessages'>;

let temporal: FastTemporal<Activities>;
beforeAll(async () => {
  temporal = await startFastTemporal<Activities>({
    activities: [
      'deleteExpiredIdempotencyKeys',
      'deleteStaleRateLimitWindows',
      'deleteSpentAttachments',
      'retentionKinds',
      'applyRetention',
      'recheckDomains',
      'recomputeTrackedSegments',
      'sweepExecutions',
      'planBillingUsageReports',
      'reportBillingUsage',
      'findUndeliveredEmails',
      'findUnprocessedInbound',
      'processInboundMessages',
    ],
  });
});
afterAll(async () => {
  await temporal?.teardown();
});

/** Runs a workflow of no input on the file's queue and answers its result. */
const run = (type: string, args: unknown[] = [], workflowId = `${type}-${crypto.randomUUID()}`) =>
  temporal.client.workflow.execute(type, { taskQueue: temporal.taskQueue, workflowId, args });

it('hourlyCleanupWorkflow: the counters and attachments, then each retention kind, saying which ran out of time', async () => {
  const kinds: string[] = [];
  temporal.standIns({
    async deleteStaleRateLimitWindows() {
      return 3;
    },
    async deleteSpentAttachments() {
      return 2;
    },
    async retentionKinds() {
      return ['sessions', 'idempotencyKeys', 'inboundContent'];
    },
    async applyRetention(kind) {
      kinds.push(kind);
      return { kind, removed: kind.length, finished: kind !== 'inboundContent' };
    },
  });
  await expect(run('hourlyCleanupWorkflow')).resolves.toEqual({
    idempotencyKeysDeleted: 15,
    rateLimitWindowsDeleted: 3,
    attachmentSetsDeleted: 2,
    retention: { sessions: 8, idempotencyKeys: 15, inboundContent: 14 },
    unfinished: ['inboundContent'],
  });
  expect(kinds).toEqual(['sessions', 'idempotencyKeys', 'inboundContent']);
});

it('domainRecheckWorkflow, trackedSegmentsRecomputeWorkflow, workflowExecutionSweepWorkflow: one activity each, its answer the result', async () => {
  const recheck = { checked: 4, verified: 1, failed: 1, pending: 2, temporaryFailures: 0 };
  const recompute = { lastSegmentId: 's9', segments: 9, added: 3, removed: 1 };
  const sweep = { created: 1, started: 2, signalled: 3 };
  temporal.standIns({
    async recheckDomains() {
      return recheck;
    },
    async recomputeTrackedSegments() {
      return recompute;
    },
    async sweepExecutions() {
      return sweep;
    },
  });
  await expect(run('domainRecheckWorkflow')).resolves.toEqual(recheck);
  await expect(run('trackedSegmentsRecomputeWorkflow')).resolves.toEqual(recompute);
  await expect(run('workflowExecutionSweepWorkflow')).resolves.toEqual(sweep);
});

describe('billingUsageReportWorkflow', () => {
  it('reports every planned report', async () => {
    const reported: string[] = [];
    temporal.standIns({
      async planBillingUsageReports() {
        return ['r1', 'r2', 'r3'];
      },
      async reportBillingUsage(input) {
        reported.push(input.reportId);
        return 'reported';
      },
    });
    await expect(run('billingUsageReportWorkflow')).resolves.toEqual({ planned: 3, reported: 3, left: 0 });
    expect(reported).toEqual(['r1', 'r2', 'r3']);
  });

  it('stops at the first report Stripe keeps refusing, leaving the rest for the next run', async () => {
    const tried: string[] = [];
    temporal.standIns({
      async planBillingUsageReports() {
        return ['r1', 'r2', 'r3'];
      },
      async reportBillingUsage(input) {
        tried.push(input.reportId);
        if (input.reportId === 'r2') throw ApplicationFailure.nonRetryable('Stripe is away');
        return 'reported';
      },
    });
    await expect(run('billingUsageReportWorkflow')).resolves.toEqual({ planned: 3, reported: 1, left: 2 });
    expect(tried).toEqual(['r1', 'r2']);
  });
});

describe('the sweeps', () => {
  async function expectRunning(workflowId: string, type: string, taskQueue: string): Promise<WorkflowHandle> {
    const handle = temporal.client.workflow.getHandle(workflowId);
    await expect(handle.describe()).resolves.toMatchObject({ type, taskQueue, status: { name: 'RUNNING' } });
    return handle;
  }

  it('emailDeliverySweepWorkflow starts each group under its recorded id, leaving one still running alone', async () => {
    const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const running = await temporal.client.workflow.start('emailDeliveryWorkflow', {
      taskQueue: temporal.deliveryQueue,
      workflowId: `send-${c}`,
      args: [{ projectId: 'p1', emailIds: [c], retryDelaysSeconds: [] }],
    });
    let asked: unknown;
    temporal.standIns({
      async findUndeliveredEmails(input) {
        asked = input;
        return {
          retryDelaysSeconds: [30],
          groups: [
            { projectId: 'p1', workflowId: `deliver-${a}`, emailIds: [a, b] },
            { projectId: 'p1', workflowId: `send-${c}`, emailIds: [c] },
          ],
        };
      },
    });
    await expect(run('emailDeliverySweepWorkflow')).resolves.toEqual({ started: 1, alreadyRunning: 1 });
    expect(asked).toEqual({ olderThanSeconds: DELIVERY_SWEEP_AFTER_SECONDS, limit: 5000 });
    const started = await expectRunning(`deliver-${a}`, 'emailDeliveryWorkflow', temporal.deliveryQueue);
    const [first] = (await started.fetchHistory()).events ?? [];
    expect(first.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).toMatch(/^emailDeliverySweepWorkflow-/);
    await expect(running.describe()).resolves.toMatchObject({ runId: running.firstExecutionRunId, status: { name: 'RUNNING' } });
    await started.terminate('looked at');
    await running.terminate('looked at');
  });

  it('inboundSweepWorkflow starts the processing of each stored round under its id, which then processes it', async () => {
    const [m1, m2, m3] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const processed: string[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    temporal.standIns({
      async findUnprocessedInbound() {
        return [
          { workflowId: `inbound-${m1}`, projectId: 'p1', messageIds: [m1, m2] },
          { workflowId: `inbound-${m3}`, projectId: 'p2', messageIds: [m3] },
        ];
      },
      async processInboundMessages(input) {
        processed.push(input.messageIds);
        if (input.messageIds[0] === m3) await gate;
        return { processed: input.messageIds.length };
      },
    });
    await expect(run('inboundSweepWorkflow')).resolves.toEqual({ started: 2, alreadyRunning: 0 });
    await expect(temporal.client.workflow.getHandle(`inbound-${m1}`).result()).resolves.toEqual({ processed: 2 });
    // The second still runs: a sweep now leaves it alone.
    await expectRunning(`inbound-${m3}`, 'inboundMessagesWorkflow', temporal.taskQueue);
    await expect(run('inboundSweepWorkflow')).resolves.toEqual({ started: 1, alreadyRunning: 1 });
    release();
    await expect(temporal.client.workflow.getHandle(`inbound-${m3}`).result()).resolves.toEqual({ processed: 1 });
    await expect(temporal.client.workflow.getHandle(`inbound-${m1}`).result()).resolves.toEqual({ processed: 2 });
    expect(processed.sort()).toEqual([[m1, m2], [m1, m2], [m3]].sort());
  });
});
