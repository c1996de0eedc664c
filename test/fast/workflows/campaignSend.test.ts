import crypto from 'node:crypto';
import { WorkflowFailedError, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { CampaignActivities, CampaignBatchResult } from '../../../activities/campaignActivities';
import type { CampaignProgress, campaignSendWorkflow } from '../../../workflows/campaignSendWorkflow';
import { ApplicationFailure } from '@temporalio/common';
import { eventually } from '../../support/eventually';
import { startFastTemporal, type FastTemporal } from '../support/temporalEnvironment';

/**
 * campaignSendWorkflow's orchestration: the schedule, the window of batches and its planning, the
 * rate cap's pacing, retries in delivery workflows, the ways a send ends (SENT, stopped, the monthly
 * cap, cancelled through Temporal) and crossing runs (continue-as-new). The batches are stand-ins:
 * what a batch does is tested with the database (test/campaigns).
 */
let temporal: FastTemporal<CampaignActivities>;
beforeAll(async () => {
  temporal = await startFastTemporal<CampaignActivities>({
    activities: [
      'loadCampaignForSend',
      'beginCampaignSend',
      'fixCampaignAudience',
      'finishCampaignSend',
      'cancelCampaignSend',
      'planCampaignBatches',
      'stopCampaignAtCap',
      'sendCampaignBatch',
    ],
  });
});
afterAll(async () => {
  await temporal?.teardown();
});

type Loaded = NonNullable<Awaited<ReturnType<CampaignActivities['loadCampaignForSend']>>>;

interface Scenario {
  /** How many batches the audience makes (their starts: null, b1, b2, ...). */
  batches: number;
  /** What loadCampaignForSend answers (null: the campaign is gone). */
  load?: Partial<Loaded> | null;
  begin?: boolean;
  /** A batch's result by its number (0 first, in the audience's order); recipients 5, sent 4, suppressed 1 unless said. */
  batch?: (n: number) => Partial<CampaignBatchResult>;
  /** How long a batch takes (by its number). */
  batchMs?: number | ((n: number) => number);
  /** A batch waits for this before it answers. */
  gate?: Promise<void>;
}

/** Stand-ins over an audience of `batches` batches; `calls` records what the workflow asked. */
function campaignStandIns(scenario: Scenario) {
  const starts: Array<string | null> = [null, ...Array.from({ length: scenario.batches - 1 }, (_, i) => `b${i + 1}`)];
  const calls = {
    loads: 0,
    begun: 0,
    batches: [] as Array<string | null>,
    plans: [] as Array<{ afterContactId: string | null; batchSize: number; count: number }>,
    limits: [] as number[],
    inFlight: 0,
    maxInFlight: 0,
    finished: 0,
    cancelled: 0,
    stoppedAtCap: [] as Array<{ category: string; limit: number | null; sent: number }>,
  };
  temporal.standIns({
    async loadCampaignForSend() {
      calls.loads++;
      if (scenario.load === null) return null;
      return { status: 'SENDING', scheduledFor: null, ratePerSecond: null, retryDelaysSeconds: [60], maxHistoryEvents: null, ...scenario.load };
    },
    async beginCampaignSend() {
      calls.begun++;
      return scenario.begin ?? true;
    },
    async fixCampaignAudience() {
      return scenario.batches * 5;
    },
    async planCampaignBatches(input) {
      calls.plans.push({ afterContactId: input.afterContactId, batchSize: input.batchSize, count: input.count });
      const from = starts.indexOf(input.afterContactId);
      return { starts: starts.slice(from, from + input.count), next: starts[from + input.count] ?? null, remaining: 0 };
    },
    async sendCampaignBatch(input) {
      const n = starts.indexOf(input.afterContactId);
      calls.batches.push(input.afterContactId);
      calls.limits.push(input.limit);
      calls.maxInFlight = Math.max(calls.maxInFlight, ++calls.inFlight);
      try {
        if (scenario.gate) await scenario.gate;
        const ms = typeof scenario.batchMs === 'function' ? scenario.batchMs(n) : (scenario.batchMs ?? 20);
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { stopped: false, nextCursor: null, recipients: 5, sent: 4, failed: 0, suppressed: 1, retry: [], ...scenario.batch?.(n) };
      } finally {
        calls.inFlight--;
      }
    },
    async finishCampaignSend() {
      calls.finished++;
      return true;
    },
    async cancelCampaignSend() {
      calls.cancelled++;
    },
    async stopCampaignAtCap(input) {
      calls.stoppedAtCap.push({ category: input.category, limit: input.limit, sent: input.sent });
    },
  });
  return { calls, starts };
}

const start = (
  input: Partial<Parameters<typeof campaignSendWorkflow>[0]> = {},
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof campaignSendWorkflow>> => {
  const campaignId = crypto.randomUUID();
  return temporal.client.workflow.start<typeof campaignSendWorkflow>('campaignSendWorkflow', {
    taskQueue: temporal.taskQueue,
    workflowId: `campaign-${campaignId}`,
    args: [{ campaignId, projectId: 'p1', ...input }],
  });
};

const sent = (batches: number): CampaignProgress => ({
  phase: 'SENT',
  totalRecipients: batches * 5,
  cursor: null,
  recipients: batches * 5,
  sent: batches * 4,
  failed: 0,
  suppressed: batches,
  batches,
  retried: 0,
});

const historyOf = async (handle: WorkflowHandle, runId?: string) =>
  (await temporal.client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events ?? [];

it('sends every batch of the audience, four at a time, and ends SENT', async () => {
  const { calls, starts } = campaignStandIns({ batches: 10, batchMs: 50 });
  const handle = await start();
  await expect(handle.result()).resolves.toEqual(sent(10));
  expect(calls.batches.sort()).toEqual([...starts].sort());
  expect(calls.maxInFlight).toBe(4);
  expect(new Set(calls.limits)).toEqual(new Set([500]));
  // Planned a window ahead: two plans of 2 × 4 starts.
  expect(calls.plans).toEqual([
    { afterContactId: null, batchSize: 500, count: 8 },
    { afterContactId: 'b8', batchSize: 500, count: 8 },
  ]);
  expect(calls.finished).toBe(1);
  await expect(handle.query('getProgress')).resolves.toEqual(sent(10));
});

it('does nothing for a campaign that is gone or not SCHEDULED or SENDING', async () => {
  const gone = campaignStandIns({ batches: 1, load: null });
  await expect((await start()).result()).resolves.toMatchObject({ phase: 'NOT_SENDABLE', batches: 0 });
  expect(gone.calls.begun).toBe(0);

  const done = campaignStandIns({ batches: 1, load: { status: 'SENT' } });
  await expect((await start()).result()).resolves.toMatchObject({ phase: 'NOT_SENDABLE', batches: 0 });
  expect(done.calls.begun).toBe(0);
});

it('waits for scheduledFor on a durable timer, then begins', async () => {
  const { calls } = campaignStandIns({ batches: 2, load: { status: 'SCHEDULED', scheduledFor: new Date(Date.now() + 400).toISOString() } });
  const began = Date.now();
  const handle = await start();
  await eventually(async () => expect((await historyOf(handle)).some((e) => e.timerStartedEventAttributes)).toBe(true), 10_000, 50);
  expect(calls.begun).toBe(0);
  await expect(handle.result()).resolves.toEqual(sent(2));
  expect(Date.now() - began).toBeGreaterThanOrEqual(400);
});

it('ends CANCELLED, sending nothing, when the campaign was cancelled before its time', async () => {
  const { calls } = campaignStandIns({ batches: 2, load: { status: 'SCHEDULED', scheduledFor: new Date(Date.now() - 1000).toISOString() }, begin: false });
  const handle = await start();
  await expect(handle.result()).resolves.toMatchObject({ phase: 'CANCELLED', batches: 0 });
  expect(calls.batches).toEqual([]);
  // A time already past sets no timer.
  expect((await historyOf(handle)).some((e) => e.timerStartedEventAttributes)).toBe(false);
});

it("paces a rate-capped project: one batch at a time, a second's worth each", async () => {
  // 400 a second: batches of 400, one at a time; 100 + 100 + 0 recipients take at least half a second.
  const { calls } = campaignStandIns({ batches: 3, load: { ratePerSecond: 400 }, batch: (n) => ({ recipients: n < 2 ? 100 : 0, sent: n < 2 ? 100 : 0 }) });
  const began = Date.now();
  const handle = await start();
  await expect(handle.result()).resolves.toMatchObject({ phase: 'SENT', recipients: 200, sent: 200, batches: 3 });
  expect(Date.now() - began).toBeGreaterThanOrEqual(500);
  expect(calls.maxInFlight).toBe(1);
  expect(calls.plans[0]).toEqual({ afterContactId: null, batchSize: 400, count: 2 });
  expect(new Set(calls.limits)).toEqual(new Set([400]));
  expect((await historyOf(handle)).filter((e) => e.timerStartedEventAttributes).length).toBeGreaterThanOrEqual(1);
});

it('hands temporarily failed emails to delivery workflows, at most 50 emails each', async () => {
  const few = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  const many = Array.from({ length: 120 }, () => crypto.randomUUID());
  campaignStandIns({ batches: 3, load: { retryDelaysSeconds: [30, 60] }, batch: (n) => ({ retry: n === 0 ? few : n === 2 ? many : [] }) });
  const handle = await start();
  await expect(handle.result()).resolves.toMatchObject({ phase: 'SENT', retried: 123 });
  const campaignId = handle.workflowId.slice('campaign-'.length);
  for (const chunk of [few, many.slice(0, 50), many.slice(50, 100), many.slice(100)]) {
    const child = temporal.client.workflow.getHandle(`deliver-${chunk[0]}`);
    const described = await child.describe();
    expect(described).toMatchObject({ type: 'emailDeliveryWorkflow', taskQueue: temporal.deliveryQueue });
    const attributes = described.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value]);
    expect(attributes.sort()).toEqual([
      ['CampaignId', campaignId],
      ['EmailIds', chunk],
      ['ProjectId', 'p1'],
    ]);
    const [started] = await historyOf(child);
    expect(started.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).toBe(handle.workflowId);
    await child.terminate('looked at');
  }
});

it('stops launching batches once one finds the campaign no longer SENDING, and ends CANCELLED', async () => {
  const { calls } = campaignStandIns({ batches: 10, batch: (n) => ({ stopped: n === 1, recipients: n === 1 ? 0 : 5 }) });
  const handle = await start();
  await expect(handle.result()).resolves.toMatchObject({ phase: 'CANCELLED' });
  expect(calls.cancelled).toBe(1);
  expect(calls.finished).toBe(0);
  // The four of the first window, and those that replaced finished ones before b1 answered.
  expect(calls.batches.length).toBeLessThan(10);
});

it('stops at the monthly cap once the running batches finish, and says how many were sent', async () => {
  const { calls } = campaignStandIns({
    batches: 12,
    batchMs: 30,
    batch: (n) => (n === 2 || n === 3 ? { capReached: { category: 'campaigns', limit: 40 } } : {}),
  });
  const handle = await start();
  const progress = await handle.result();
  expect(progress).toMatchObject({ phase: 'STOPPED_AT_CAP' });
  expect(calls.stoppedAtCap).toEqual([{ category: 'campaigns', limit: 40, sent: progress.sent }]);
  expect(calls.batches.length).toBeLessThan(12);
  expect(calls.finished).toBe(0);
});

it('a batch that finds the campaign stopped wins over the cap it reached: CANCELLED', async () => {
  const { calls } = campaignStandIns({ batches: 1, batch: () => ({ stopped: true, capReached: { category: 'campaigns', limit: 1 } }) });
  await expect((await start()).result()).resolves.toMatchObject({ phase: 'CANCELLED' });
  expect(calls.stoppedAtCap).toEqual([]);
  expect(calls.cancelled).toBe(1);
});

it('ends CANCELLED when cancelled through Temporal while batches run, marking the campaign so', async () => {
  let release!: () => void;
  const { calls } = campaignStandIns({ batches: 10, gate: new Promise<void>((resolve) => (release = resolve)) });
  const handle = await start();
  await eventually(() => expect(calls.batches.length).toBe(4), 10_000, 20);
  await handle.cancel();
  await expect(handle.result()).resolves.toMatchObject({ phase: 'CANCELLED', batches: 0 });
  release();
  expect(calls.cancelled).toBe(1);
  expect(calls.finished).toBe(0);
});

it('ends CANCELLED when cancelled through Temporal while it waits for its time', async () => {
  const { calls } = campaignStandIns({ batches: 2, load: { status: 'SCHEDULED', scheduledFor: new Date(Date.now() + 60_000).toISOString() } });
  const handle = await start();
  await eventually(async () => expect((await historyOf(handle)).some((e) => e.timerStartedEventAttributes)).toBe(true), 10_000, 50);
  await handle.cancel();
  await expect(handle.result()).resolves.toMatchObject({ phase: 'CANCELLED', batches: 0 });
  expect(calls.begun).toBe(0);
  expect(calls.cancelled).toBe(1);
});

describe('continue-as-new', () => {
  /** The runs of a workflow id, first to last, as the chain of continued runs records them. */
  async function runsOf(handle: WorkflowHandleWithFirstExecutionRunId): Promise<string[]> {
    const runs: string[] = [handle.firstExecutionRunId];
    for (;;) {
      const events = await historyOf(handle, runs[runs.length - 1]);
      const next = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
      if (!next) return runs;
      runs.push(next);
    }
  }

  it("carries the send on in fresh runs past the input's maxHistoryEvents, every batch sent once", async () => {
    const { calls, starts } = campaignStandIns({ batches: 12 });
    const handle = await start({ maxHistoryEvents: 30 });
    await expect(handle.result()).resolves.toEqual(sent(12));
    expect(calls.batches.sort()).toEqual([...starts].sort());
    expect((await runsOf(handle)).length).toBeGreaterThan(1);
    // Loaded, begun and its audience fixed once: the later runs resume with the progress.
    expect(calls.loads).toBe(1);
    expect(calls.begun).toBe(1);
    expect(calls.finished).toBe(1);
  });

  it('takes the threshold loadCampaignForSend answers (CAMPAIGN_HISTORY_EVENTS) when the input has none', async () => {
    const { calls, starts } = campaignStandIns({ batches: 6, load: { maxHistoryEvents: 30 } });
    const handle = await start();
    await expect(handle.result()).resolves.toEqual(sent(6));
    expect(calls.batches.sort()).toEqual([...starts].sort());
    expect((await runsOf(handle)).length).toBeGreaterThan(1);
  });

  it('carries a rate-capped send on in a fresh run when its history fills between two batches', async () => {
    // One batch at a time: when the history is full, nothing runs at the top of the loop.
    const { calls, starts } = campaignStandIns({ batches: 8, load: { ratePerSecond: 100_000 } });
    const handle = await start({ maxHistoryEvents: 40 });
    await expect(handle.result()).resolves.toEqual(sent(8));
    expect(calls.batches.sort()).toEqual([...starts].sort());
    expect((await runsOf(handle)).length).toBeGreaterThan(1);
    expect(calls.maxInFlight).toBe(1);
  });

  it('does not continue when the history fills while the last batches run: it finishes', async () => {
    // A resumed run (the workflow's own input): all four batches launch at once, and the history
    // passes 5 events while they run: nothing is left to launch, so no new run.
    const { calls } = campaignStandIns({ batches: 4, batchMs: (n) => 100 * (n + 1) });
    const progress: CampaignProgress = { ...sent(0), phase: 'SENDING', totalRecipients: 20 };
    const handle = await start({ resume: { progress, ratePerSecond: null, retryDelaysSeconds: [], maxHistoryEvents: 5 } });
    await expect(handle.result()).resolves.toEqual(sent(4));
    expect(await runsOf(handle)).toHaveLength(1);
    expect(calls.loads).toBe(0);
    expect(calls.finished).toBe(1);
  });
});

it('fails when an activity fails for good (not retried here: a stand-in that says so)', async () => {
  campaignStandIns({ batches: 1 });
  temporal.standIns({
    async loadCampaignForSend() {
      throw ApplicationFailure.nonRetryable('the database is gone');
    },
  });
  await expect((await start()).result()).rejects.toBeInstanceOf(WorkflowFailedError);
});
