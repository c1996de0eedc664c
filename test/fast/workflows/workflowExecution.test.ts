import crypto from 'node:crypto';
import { WorkflowFailedError, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { ApplicationFailure, type Duration } from '@temporalio/common';
import type { ArrivedEvent, AutomationExecutionActivities, StepOutcome } from '../../../activities/automationExecutionActivities';
import type { AutomationExecutionInput, ExecutionState, workflowExecutionWorkflow } from '../../../workflows/workflowExecutionWorkflow';
import { eventually } from '../../support/eventually';
import { startFastTemporal, type FastTemporal } from '../support/temporalEnvironment';

/**
 * workflowExecutionWorkflow's orchestration: the walk the step activities lead, DELAY and
 * WAIT_FOR_EVENT waits (timer, signal, timeout), cancelling (signal and Temporal), retries in a
 * delivery workflow and crossing runs with a wait under way. The steps themselves are stand-ins:
 * they are tested with the database (test/workflows).
 */
let temporal: FastTemporal<AutomationExecutionActivities>;
beforeAll(async () => {
  temporal = await startFastTemporal<AutomationExecutionActivities>({ activities: ['runSteps', 'finishWait', 'endExecution'] });
});
afterAll(async () => {
  await temporal?.teardown();
});

type WaitEnd = Parameters<AutomationExecutionActivities['finishWait']>[0];
type Ending = Parameters<AutomationExecutionActivities['endExecution']>[0];

/**
 * Stand-ins answering runSteps and finishWait with `outcomes` in turn, each by the walk's position
 * it is asked at (input.sequence), as the real ones are idempotent: a local activity repeated (its
 * workflow task timed out on a busy machine) gets the same answer. `calls` records what they were
 * asked, once per position.
 */
function walk(outcomes: StepOutcome[], options: { from?: number; stepsGate?: Promise<void>; endGate?: Promise<void> } = {}) {
  const atSequence = new Map<number, StepOutcome>();
  let sequence = options.from ?? 0;
  for (const outcome of outcomes) {
    atSequence.set(sequence, outcome);
    if (outcome.kind !== 'ended') sequence = outcome.sequence;
  }
  const steps = new Map<number, { stepId: string | null; sequence: number; context: Record<string, unknown> }>();
  const waits = new Map<number, WaitEnd>();
  const ends: Ending[] = [];
  const calls = {
    get steps() {
      return [...steps.values()];
    },
    get waits() {
      return [...waits.values()];
    },
    ends,
  };
  const answer = (at: number) => {
    const outcome = atSequence.get(at);
    if (!outcome) throw ApplicationFailure.nonRetryable(`the walk has no outcome at ${at}`);
    return outcome;
  };
  temporal.standIns({
    async runSteps(input) {
      steps.set(input.sequence, { stepId: input.stepId, sequence: input.sequence, context: input.context });
      await options.stepsGate;
      return answer(input.sequence);
    },
    async finishWait(input) {
      waits.set(input.sequence, input);
      return answer(input.sequence);
    },
    async endExecution(input) {
      ends.push(input);
      if (options.endGate && ends.length === 1) await options.endGate;
    },
  });
  return calls;
}

const nextStep = (sequence: number, nextStepId: string, context: Record<string, unknown> = {}): StepOutcome => ({
  kind: 'next',
  sequence,
  nextStepId,
  context,
});
const delay = (sequence: number, stepId: string, waitMs: number): StepOutcome => ({ kind: 'delay', sequence, stepId, context: { at: stepId }, waitMs });
const waitFor = (sequence: number, eventName: string, timeoutMs: number | null, waitingSince = new Date()): StepOutcome => ({
  kind: 'wait',
  sequence,
  stepId: `wait-${sequence}`,
  context: {},
  eventName,
  timeoutMs,
  waitingSince: waitingSince.toISOString(),
});
const ended = (status: 'COMPLETED' | 'EXITED' | 'FAILED' = 'COMPLETED'): StepOutcome => ({ kind: 'ended', status });

const start = (
  input: Partial<AutomationExecutionInput> = {},
  options: { workflowTaskTimeout?: Duration } = {},
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof workflowExecutionWorkflow>> => {
  const executionId = crypto.randomUUID();
  return temporal.client.workflow.start<typeof workflowExecutionWorkflow>('workflowExecutionWorkflow', {
    ...options,
    taskQueue: temporal.taskQueue,
    workflowId: `execution-${executionId}`,
    args: [{ executionId, projectId: 'p1', workflowId: 'a1', contactId: 'c1', ...input }],
  });
};

const stateOf = (handle: WorkflowHandle) => handle.query<ExecutionState>('getState');
const event = (name: string, createdAt = new Date(), eventId: string = crypto.randomUUID()): ArrivedEvent => ({
  eventId,
  name,
  data: { from: name },
  createdAt: createdAt.toISOString(),
});
const timersOf = async (handle: WorkflowHandle) => ((await handle.fetchHistory()).events ?? []).filter((e) => e.timerStartedEventAttributes).length;

it('walks from the TRIGGER through the steps the activities lead to, until the walk ends', async () => {
  const calls = walk([nextStep(1, 'send', { a: 1 }), nextStep(2, 'exit', { a: 2 }), ended('EXITED')]);
  const handle = await start();
  await expect(handle.result()).resolves.toEqual({ status: 'EXITED', steps: 3 });
  expect(calls.steps).toEqual([
    { stepId: null, sequence: 0, context: {} },
    { stepId: 'send', sequence: 1, context: { a: 1 } },
    { stepId: 'exit', sequence: 2, context: { a: 2 } },
  ]);
  expect(calls.ends).toEqual([]);
  await expect(stateOf(handle)).resolves.toEqual({ status: 'ENDED', stepId: 'exit', sequence: 2, waitingFor: null });
});

it('waits out a DELAY on a timer, then goes on from the step the wait leads to (ELAPSED)', async () => {
  const calls = walk([delay(1, 'pause', 300), ended()]);
  const began = Date.now();
  const handle = await start();
  await expect(handle.result()).resolves.toEqual({ status: 'COMPLETED', steps: 2 });
  expect(Date.now() - began).toBeGreaterThanOrEqual(300);
  expect(calls.waits).toEqual([{ executionId: expect.any(String), sequence: 1, stepId: 'pause', context: { at: 'pause' }, outcome: 'ELAPSED' }]);
  expect(await timersOf(handle)).toBe(1);
});

it('takes the awaited event recorded since the wait began, ignoring others, repeats and a flood', async () => {
  const since = new Date();
  const calls = walk([waitFor(1, 'paid', 60_000, since), ended()]);
  const handle = await start();
  await eventually(async () => expect(await stateOf(handle)).toEqual({ status: 'WAITING', stepId: 'wait-1', sequence: 1, waitingFor: 'paid' }), 10_000, 50);
  // Older than the wait, another name, more than the 20 kept: none ends the wait.
  await handle.signal('eventArrived', event('paid', new Date(since.getTime() - 1000)));
  for (let i = 0; i < 22; i++) await handle.signal('eventArrived', event(`other-${i}`));
  const paid = event('paid', new Date(since.getTime() + 1));
  await handle.signal('eventArrived', paid);
  await handle.signal('eventArrived', { ...paid, data: { repeated: true } });
  await expect(handle.result()).resolves.toEqual({ status: 'COMPLETED', steps: 2 });
  expect(calls.waits).toEqual([{ executionId: expect.any(String), sequence: 1, stepId: 'wait-1', context: {}, outcome: 'EVENT', event: paid }]);
});

it('waits for an event as long as it takes when the step has no timeout', async () => {
  const calls = walk([waitFor(1, 'paid', null), ended()]);
  const handle = await start();
  await eventually(async () => expect((await stateOf(handle)).waitingFor).toBe('paid'), 10_000, 50);
  expect(await timersOf(handle)).toBe(0);
  const paid = event('paid');
  await handle.signal('eventArrived', paid);
  await expect(handle.result()).resolves.toEqual({ status: 'COMPLETED', steps: 2 });
  expect(calls.waits[0]).toMatchObject({ outcome: 'EVENT', event: paid });
});

it('goes on with TIMEOUT when the event does not come in time', async () => {
  const calls = walk([waitFor(1, 'paid', 300), ended('EXITED')]);
  const handle = await start();
  await expect(handle.result()).resolves.toEqual({ status: 'EXITED', steps: 2 });
  expect(calls.waits).toEqual([{ executionId: expect.any(String), sequence: 1, stepId: 'wait-1', context: {}, outcome: 'TIMEOUT' }]);
});

describe('cancelling', () => {
  it('the cancel signal ends a DELAY at once, CANCELLED with its reason', async () => {
    const calls = walk([delay(1, 'pause', 60_000)]);
    const handle = await start();
    await eventually(async () => expect(await timersOf(handle)).toBe(1), 10_000, 50);
    // A DELAY is no event wait: the state says RUNNING.
    await expect(stateOf(handle)).resolves.toMatchObject({ status: 'RUNNING', stepId: 'pause', waitingFor: null });
    await handle.signal('cancel', { reason: 'Stopped by its owner' });
    await expect(handle.result()).resolves.toEqual({ status: 'CANCELLED', steps: 2 });
    expect(calls.ends).toEqual([{ executionId: expect.any(String), status: 'CANCELLED', reason: 'Stopped by its owner' }]);
    expect(calls.waits).toEqual([]);
  });

  it('the cancel signal ends a wait for an event, "Cancelled" without a reason', async () => {
    const calls = walk([waitFor(1, 'paid', null)]);
    const handle = await start();
    await eventually(async () => expect((await stateOf(handle)).waitingFor).toBe('paid'), 10_000, 50);
    await handle.signal('cancel');
    await expect(handle.result()).resolves.toEqual({ status: 'CANCELLED', steps: 2 });
    expect(calls.ends).toEqual([{ executionId: expect.any(String), status: 'CANCELLED', reason: 'Cancelled' }]);
  });

  it('a cancel signal that arrives while steps run ends the walk at its next wait', async () => {
    // Local activities: a signal reaches the workflow when its task completes, here at the DELAY.
    let release!: () => void;
    const calls = walk([delay(1, 'pause', 60_000)], { stepsGate: new Promise<void>((resolve) => (release = resolve)) });
    const handle = await start();
    await eventually(() => expect(calls.steps).toHaveLength(1), 10_000, 20);
    await handle.signal('cancel', { reason: 'now' });
    release();
    await expect(handle.result()).resolves.toEqual({ status: 'CANCELLED', steps: 2 });
    expect(calls.steps).toHaveLength(1);
    expect(calls.waits).toEqual([]);
    expect(calls.ends).toEqual([{ executionId: expect.any(String), status: 'CANCELLED', reason: 'now' }]);
  });

  it("Temporal's cancellation ends a wait CANCELLED", async () => {
    const calls = walk([delay(1, 'pause', 60_000)]);
    const handle = await start();
    await eventually(async () => expect(await timersOf(handle)).toBe(1), 10_000, 50);
    await handle.cancel();
    await expect(handle.result()).resolves.toEqual({ status: 'CANCELLED', steps: 2 });
    expect(calls.ends).toEqual([{ executionId: expect.any(String), status: 'CANCELLED', reason: 'Cancelled through Temporal' }]);
  });

  it("Temporal's cancellation while the cancel signal is being recorded keeps the signal's reason", async () => {
    let release!: () => void;
    const calls = walk([delay(1, 'pause', 60_000)], { endGate: new Promise<void>((resolve) => (release = resolve)) });
    // The cancellation reaches the workflow when its task, held open by the local activity, is renewed: at 80 % of this timeout.
    const handle = await start({}, { workflowTaskTimeout: '1 second' });
    await eventually(async () => expect(await timersOf(handle)).toBe(1), 10_000, 50);
    await handle.signal('cancel', { reason: 'by its owner' });
    await eventually(() => expect(calls.ends).toHaveLength(1), 10_000, 20);
    await handle.cancel();
    await expect(handle.result()).resolves.toEqual({ status: 'CANCELLED', steps: 2 });
    release();
    expect(calls.ends.map((e) => e.reason)).toEqual(['by its owner', 'by its owner']);
  });
});

describe('mail to retry', () => {
  const retryOf = (emailIds: string[]): StepOutcome => ({ ...nextStep(1, 'after'), retry: { emailIds, retryDelaysSeconds: [30] } });

  it("goes to one delivery workflow named after the first email's own (send-<first id>)", async () => {
    const emailIds = [crypto.randomUUID(), crypto.randomUUID()];
    walk([retryOf(emailIds), ended()]);
    const handle = await start({ contactId: 'contact-7' });
    await expect(handle.result()).resolves.toEqual({ status: 'COMPLETED', steps: 2 });
    const child = temporal.client.workflow.getHandle(`send-${emailIds[0]}`);
    const described = await child.describe();
    expect(described).toMatchObject({ type: 'emailDeliveryWorkflow', taskQueue: temporal.deliveryQueue });
    const attributes = described.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value]);
    expect(attributes.sort()).toEqual([
      ['ContactId', 'contact-7'],
      ['EmailIds', emailIds],
      ['ProjectId', 'p1'],
    ]);
    const [started] = (await child.fetchHistory()).events ?? [];
    expect(started.workflowExecutionStartedEventAttributes?.input?.payloads).toHaveLength(1);
    await child.terminate('looked at');
  });

  it('leaves a delivery the sweep started first under the same id alone', async () => {
    const emailIds = [crypto.randomUUID()];
    const swept = await temporal.client.workflow.start('emailDeliveryWorkflow', {
      taskQueue: temporal.deliveryQueue,
      workflowId: `send-${emailIds[0]}`,
      args: [{ projectId: 'p1', emailIds, retryDelaysSeconds: [] }],
    });
    walk([retryOf(emailIds), ended()]);
    await expect((await start()).result()).resolves.toEqual({ status: 'COMPLETED', steps: 2 });
    await expect(swept.describe()).resolves.toMatchObject({ runId: swept.firstExecutionRunId, status: { name: 'RUNNING' } });
    await swept.terminate('looked at');
  });
});

describe('continue-as-new', () => {
  /** The runs of a workflow id, first to last. */
  async function runsOf(handle: WorkflowHandleWithFirstExecutionRunId): Promise<string[]> {
    const runs: string[] = [handle.firstExecutionRunId];
    for (;;) {
      const events = (await temporal.client.workflow.getHandle(handle.workflowId, runs[runs.length - 1]).fetchHistory()).events ?? [];
      const next = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
      if (!next) return runs;
      runs.push(next);
    }
  }

  /** A loop through a WAIT_FOR_EVENT: each round waits for one `tick`, which the test sends once the run waits for it. */
  async function loop(rounds: number, input: Partial<AutomationExecutionInput>, first: Partial<StepOutcome> = {}) {
    const outcomes = Array.from({ length: rounds }, (_, i) => waitFor(i + 1, 'tick', null));
    Object.assign(outcomes[0], first);
    const calls = walk([...outcomes, ended()]);
    const handle = await start(input);
    for (let round = 1; round <= rounds; round++) {
      await eventually(async () => expect(await stateOf(handle)).toMatchObject({ status: 'WAITING', sequence: round }), 10_000, 20);
      await handle.signal('eventArrived', event('tick', new Date(), `tick-${round}`));
    }
    await expect(handle.result()).resolves.toEqual({ status: 'COMPLETED', steps: rounds + 1 });
    expect(calls.waits.map((w) => [w.sequence, w.outcome, w.event?.eventId])).toEqual(
      Array.from({ length: rounds }, (_, i) => [i + 1, 'EVENT', `tick-${i + 1}`]),
    );
    expect(calls.steps).toHaveLength(1);
    return runsOf(handle);
  }

  it("carries a long walk on in fresh runs past the input's maxHistoryEvents, a wait under way included", async () => {
    expect((await loop(8, { maxHistoryEvents: 20 })).length).toBeGreaterThan(1);
  });

  it('takes the threshold the first steps answer (EXECUTION_HISTORY_EVENTS)', async () => {
    expect((await loop(5, {}, { maxHistoryEvents: 20 })).length).toBeGreaterThan(1);
  });

  it('a run resumed after its DELAY ran out goes on at once', async () => {
    const calls = walk([ended()], { from: 4 });
    const wait = { kind: 'delay' as const, until: Date.now() - 1000 };
    const handle = await start({ resume: { stepId: 'pause', sequence: 4, context: { n: 4 }, maxHistoryEvents: 2000, wait, arrivals: [] } });
    await expect(handle.result()).resolves.toEqual({ status: 'COMPLETED', steps: 5 });
    expect(calls.waits).toEqual([{ executionId: expect.any(String), sequence: 4, stepId: 'pause', context: { n: 4 }, outcome: 'ELAPSED' }]);
    expect(await timersOf(handle)).toBe(0);
  });

  it('a run resumed after its wait timed out takes an event that had arrived, else TIMEOUT', async () => {
    const since = Date.now() - 5000;
    const paid = event('paid', new Date(since + 1));
    const resume = (arrivals: ArrivedEvent[]) => ({
      stepId: 'wait',
      sequence: 2,
      context: {},
      maxHistoryEvents: 2000,
      wait: { kind: 'event' as const, eventName: 'paid', until: Date.now() - 1000, since },
      arrivals,
    });
    const withEvent = walk([ended()], { from: 2 });
    await expect((await start({ resume: resume([paid]) })).result()).resolves.toEqual({ status: 'COMPLETED', steps: 3 });
    expect(withEvent.waits[0]).toMatchObject({ outcome: 'EVENT', event: paid });

    const without = walk([ended()], { from: 2 });
    await expect((await start({ resume: resume([]) })).result()).resolves.toEqual({ status: 'COMPLETED', steps: 3 });
    expect(without.waits[0]).toMatchObject({ outcome: 'TIMEOUT' });
  });
});

it('fails when a step activity fails for good (not retried here: a stand-in that says so)', async () => {
  walk([]);
  await expect((await start()).result()).rejects.toBeInstanceOf(WorkflowFailedError);
});
