import {
  CancellationScope,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ArrivedEvent, SendRetry, StepOutcome, AutomationExecutionActivities } from '../activities/automationExecutionActivities';
import { emailDeliveryWorkflow } from './emailDeliveryWorkflow';
import { deliveryWorkflowIds, deliveryWorkflowStart } from '../temporal/deliveryWorkflowStart';

const stepActivityOptions = {
  startToCloseTimeout: '2 minutes',
  // Database or transport trouble: keep trying. A step that cannot work (a deleted template, a
  // webhook that answers 4xx) is not an error of the activity: it ends the execution FAILED.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const;
/** How executions started before LOCAL_STEPS_PATCH ran their steps (kept so their histories replay). */
const taskQueueSteps = proxyActivities<AutomationExecutionActivities>(stepActivityOptions);
/**
 * The steps run as local activities, inside the workflow task that reaches them: an execution
 * costs Temporal two workflow tasks (start, and the end of each wait) instead of a workflow task
 * and an activity task per run of steps. The activities are idempotent (the step-history rows are
 * checkpoints), which is what a local activity repeated after a worker crash needs.
 */
const localSteps = proxyLocalActivities<AutomationExecutionActivities>(stepActivityOptions);
const LOCAL_STEPS_PATCH = 'execution-steps-as-local-activities';

// ---- Signals and queries ----------------------------------------------------------------------

/** A recorded event of the contact, sent while the execution waits for events of its name. */
export const eventArrivedSignal = defineSignal<[ArrivedEvent]>('eventArrived');
/** Ends the execution CANCELLED (as Temporal's own cancellation does). */
export const cancelSignal = defineSignal<[{ reason?: string }?]>('cancel');
export const getExecutionStateQuery = defineQuery<ExecutionState>('getState');

export interface ExecutionState {
  status: 'RUNNING' | 'WAITING' | 'ENDED';
  stepId: string | null;
  sequence: number;
  waitingFor: string | null;
}

/** A wait under way, in workflow time, so a run that continues as new waits only what is left. */
export type PendingWait = { kind: 'delay'; until: number } | { kind: 'event'; eventName: string; until: number | null; since: number };

export interface AutomationExecutionInput {
  executionId: string;
  projectId: string;
  workflowId: string;
  contactId: string;
  /**
   * History events after which the walk carries on in a fresh run (default MAX_HISTORY_EVENTS).
   * The first runSteps may answer another (EXECUTION_HISTORY_EVENTS: the durability test's worker
   * process crosses runs with it), which then applies.
   */
  maxHistoryEvents?: number;
  /** Where a run that continued as new carries on. */
  resume?: {
    stepId: string;
    sequence: number;
    context: Record<string, unknown>;
    maxHistoryEvents: number;
    wait: PendingWait | null;
    arrivals: ArrivedEvent[];
  };
}

export interface AutomationExecutionResult {
  status: 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';
  steps: number;
}

/**
 * History events after which the walk continues in a fresh run: a loop through a DELAY can run
 * forever. The input's `maxHistoryEvents` sets another threshold (the fast tests cross runs with a few dozen).
 */
const MAX_HISTORY_EVENTS = 2000;
/** Arrived events kept while no wait takes them (a signal may come a moment before the wait begins). */
const MAX_PENDING_EVENTS = 20;

/**
 * `execution-<id>`: one automation execution (contract section 12), walking the workflow's step
 * graph from its TRIGGER for one contact. An activity runs the steps as the definition has them
 * now, one after the other (each writes its history row, keyed by the walk's position), until a
 * DELAY or a WAIT_FOR_EVENT begins or the walk ends; the waits happen here, on a durable timer and
 * the `eventArrived` signal, and the walk goes on from the step the definition leads to when the
 * wait ends. A `cancel` signal or Temporal's cancellation ends it CANCELLED.
 */
export async function workflowExecutionWorkflow(input: AutomationExecutionInput): Promise<AutomationExecutionResult> {
  const { runSteps, finishWait, endExecution } = patched(LOCAL_STEPS_PATCH) ? localSteps : taskQueueSteps;
  let stepId: string | null = input.resume?.stepId ?? null;
  let sequence = input.resume?.sequence ?? 0;
  let context: Record<string, unknown> = input.resume?.context ?? {};
  let maxHistoryEvents = input.resume?.maxHistoryEvents ?? input.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
  let wait: PendingWait | null = input.resume?.wait ?? null;
  const arrivals: ArrivedEvent[] = [...(input.resume?.arrivals ?? [])];
  let waitingFor: string | null = null;
  let cancelRequested: string | null = null;
  let ended = false;

  setHandler(eventArrivedSignal, (event) => {
    if (arrivals.some((e) => e.eventId === event.eventId)) return;
    arrivals.push(event);
    if (arrivals.length > MAX_PENDING_EVENTS) arrivals.shift();
  });
  setHandler(cancelSignal, (request) => {
    cancelRequested = request?.reason || 'Cancelled';
  });
  setHandler(getExecutionStateQuery, () => ({ status: ended ? 'ENDED' : waitingFor !== null ? 'WAITING' : 'RUNNING', stepId, sequence, waitingFor }));

  const end = (status: AutomationExecutionResult['status']): AutomationExecutionResult => {
    ended = true;
    return { status, steps: sequence + 1 };
  };
  const historyFull = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxHistoryEvents;

  try {
    for (;;) {
      if (cancelRequested) {
        await endExecution({ executionId: input.executionId, status: 'CANCELLED', reason: cancelRequested });
        return end('CANCELLED');
      }
      if (stepId && historyFull()) {
        await continueAsNew<typeof workflowExecutionWorkflow>({ ...input, resume: { stepId, sequence, context, maxHistoryEvents, wait, arrivals } });
      }

      let outcome: StepOutcome;
      if (wait) {
        const result = await waitOut(wait);
        // Cancelled while waiting: the top of the loop ends it.
        if (!result) continue;
        wait = null;
        outcome = await finishWait({ executionId: input.executionId, sequence, stepId: stepId!, context, ...result });
      } else {
        outcome = await runSteps({ executionId: input.executionId, sequence, stepId, context });
      }

      if (outcome.maxHistoryEvents) maxHistoryEvents = outcome.maxHistoryEvents;
      if (outcome.retry) await deliverLater(outcome.retry);
      if (outcome.kind === 'ended') return end(outcome.status);
      sequence = outcome.sequence;
      context = outcome.context;
      if (outcome.kind === 'next') {
        stepId = outcome.nextStepId;
      } else if (outcome.kind === 'delay') {
        stepId = outcome.stepId;
        wait = { kind: 'delay', until: Date.now() + outcome.waitMs };
      } else {
        stepId = outcome.stepId;
        wait = {
          kind: 'event',
          eventName: outcome.eventName,
          until: outcome.timeoutMs === null ? null : Date.now() + outcome.timeoutMs,
          since: Date.parse(outcome.waitingSince),
        };
      }
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(() =>
      endExecution({ executionId: input.executionId, status: 'CANCELLED', reason: cancelRequested ?? 'Cancelled through Temporal' }),
    );
    return end('CANCELLED');
  }

  /** A DELAY's timer, or a WAIT_FOR_EVENT's event or timeout; null when cancelled meanwhile. */
  async function waitOut(pending: PendingWait): Promise<{ outcome: 'ELAPSED' | 'EVENT' | 'TIMEOUT'; event?: ArrivedEvent } | null> {
    if (pending.kind === 'delay') {
      const left = pending.until - Date.now();
      if (left > 0) await condition(() => cancelRequested !== null, left);
      return cancelRequested ? null : { outcome: 'ELAPSED' };
    }
    const awaited = () => arrivals.find((e) => e.name === pending.eventName && Date.parse(e.createdAt) >= pending.since);
    waitingFor = pending.eventName;
    const done = () => cancelRequested !== null || awaited() !== undefined;
    if (pending.until === null) await condition(done);
    else if (pending.until > Date.now()) await condition(done, pending.until - Date.now());
    waitingFor = null;
    if (cancelRequested) return null;
    const event = awaited();
    arrivals.length = 0;
    return event ? { outcome: 'EVENT', event } : { outcome: 'TIMEOUT' };
  }

  /**
   * Mail SEND_EMAIL steps could not hand over yet gets the transactional delivery's retries, in
   * one delivery workflow: one email a step, from one activity's steps (STEPS_PER_ACTIVITY, 25),
   * so within MAX_EMAILS_PER_DELIVERY. Its id is `deliveryWorkflowIds.executionRetries`.
   */
  async function deliverLater(retry: SendRetry): Promise<void> {
    try {
      await startChild(emailDeliveryWorkflow, {
        ...deliveryWorkflowStart({
          taskQueue: workflowInfo().taskQueue,
          workflowId: deliveryWorkflowIds.executionRetries(retry.emailIds),
          projectId: input.projectId,
          emailIds: retry.emailIds,
          retryDelaysSeconds: retry.retryDelaysSeconds,
          contactId: input.contactId,
        }),
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
    } catch (err) {
      // The delivery sweep started it first, under the id the first email's step recorded for it.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
}
