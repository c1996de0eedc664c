import {
  CancellationScope,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  isCancellation,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { WorkflowExecutionActivities, StepOutcome, ArrivedEvent, SendRetry } from '../activities/workflowExecutionActivities';
import { emailDeliveryWorkflow } from './emailDeliveryWorkflow';
import { deliveryTaskQueue } from '../temporal-config/taskQueues';
import { ContactIdSearchAttribute, EmailIdsSearchAttribute, ProjectIdSearchAttribute } from '../temporal-config/searchAttributes';

const { beginExecution, runStep, finishWait, endExecution } = proxyActivities<WorkflowExecutionActivities>({
  startToCloseTimeout: '2 minutes',
  // Database or transport trouble: keep trying. A step that cannot work (a deleted template, a
  // webhook that answers 4xx) is not an error of the activity: it returns a FAILED outcome.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

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

export interface WorkflowExecutionInput {
  executionId: string;
  projectId: string;
  workflowId: string;
  contactId: string;
  /** Where a run that continued as new carries on. */
  resume?: { stepId: string; sequence: number; context: Record<string, unknown>; maxHistoryEvents?: number | null };
}

export interface WorkflowExecutionResult {
  status: 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';
  steps: number;
}

/**
 * History events after which the walk continues in a fresh run: a loop through a DELAY can run
 * forever, and every step adds about a dozen events (EXECUTION_HISTORY_EVENTS sets it lower, so
 * a test can see an execution cross runs).
 */
const MAX_HISTORY_EVENTS = 2000;
/** Arrived events kept while no wait takes them (a signal may come a moment before the wait begins). */
const MAX_PENDING_EVENTS = 20;

/**
 * `execution-<id>`: one automation execution (contract section 12), walking the workflow's
 * step graph from its TRIGGER for one contact. Each step is one activity that reads the step as
 * the definition has it now, does its work and writes the step's history row (keyed by the
 * walk's position, so a retry rewrites the same row); DELAY and WAIT_FOR_EVENT wait here, on a
 * durable timer and the `eventArrived` signal. The step after a wait is resolved from the
 * definition when the wait ends (see finishWait for edited and deleted steps). A `cancel` signal
 * or Temporal's cancellation ends it CANCELLED.
 */
export async function workflowExecutionWorkflow(input: WorkflowExecutionInput): Promise<WorkflowExecutionResult> {
  let stepId: string | null = input.resume?.stepId ?? null;
  let sequence = input.resume?.sequence ?? 0;
  let context: Record<string, unknown> = input.resume?.context ?? {};
  let maxHistoryEvents = input.resume?.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
  let waitingFor: string | null = null;
  let cancelRequested: string | null = null;
  let ended = false;
  const arrivals: ArrivedEvent[] = [];

  setHandler(eventArrivedSignal, (event) => {
    if (arrivals.some((e) => e.eventId === event.eventId)) return;
    arrivals.push(event);
    if (arrivals.length > MAX_PENDING_EVENTS) arrivals.shift();
  });
  setHandler(cancelSignal, (request) => {
    cancelRequested = request?.reason || 'Cancelled';
  });
  setHandler(getExecutionStateQuery, () => ({ status: ended ? 'ENDED' : waitingFor !== null ? 'WAITING' : 'RUNNING', stepId, sequence, waitingFor }));

  const end = async (result: WorkflowExecutionResult['status']): Promise<WorkflowExecutionResult> => {
    ended = true;
    return { status: result, steps: sequence };
  };

  try {
    if (!stepId) {
      const begun = await beginExecution({ executionId: input.executionId });
      if (!begun) return end('CANCELLED');
      stepId = begun.triggerStepId;
      context = begun.context;
      maxHistoryEvents = begun.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
    }

    for (;;) {
      if (cancelRequested) {
        await endExecution({ executionId: input.executionId, status: 'CANCELLED', reason: cancelRequested });
        return end('CANCELLED');
      }
      if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxHistoryEvents) {
        await continueAsNew<typeof workflowExecutionWorkflow>({ ...input, resume: { stepId: stepId!, sequence, context, maxHistoryEvents } });
      }

      let outcome: StepOutcome | null = await runStep({ executionId: input.executionId, sequence, stepId: stepId!, context });
      if (outcome.kind === 'delay' || outcome.kind === 'wait') outcome = await waitOut(outcome);
      // Cancelled while waiting: the top of the loop ends it.
      if (!outcome) continue;
      if (outcome.kind === 'delay' || outcome.kind === 'wait') throw new Error(`a wait cannot follow a wait without a step: ${outcome.kind}`);
      if (outcome.retry) await deliverLater(outcome.retry);
      if (outcome.kind === 'ended') return end(outcome.status);
      context = outcome.context;
      stepId = outcome.nextStepId;
      sequence++;
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(() =>
      endExecution({ executionId: input.executionId, status: 'CANCELLED', reason: cancelRequested ?? 'Cancelled through Temporal' }),
    );
    return end('CANCELLED');
  }

  /** A DELAY's timer or a WAIT_FOR_EVENT's event (or its timeout), then the step after it; null when cancelled meanwhile. */
  async function waitOut(wait: Extract<StepOutcome, { kind: 'delay' | 'wait' }>): Promise<StepOutcome | null> {
    const waitStep = { executionId: input.executionId, sequence, stepId: stepId!, context };
    if (wait.kind === 'delay') {
      await condition(() => cancelRequested !== null, wait.waitMs);
      if (cancelRequested) return null;
      return finishWait({ ...waitStep, outcome: 'ELAPSED' });
    }
    waitingFor = wait.eventName;
    const since = Date.parse(wait.waitingSince);
    const awaited = () => arrivals.find((e) => e.name === wait.eventName && Date.parse(e.createdAt) >= since);
    const arrived = wait.timeoutMs === null
      ? await condition(() => cancelRequested !== null || awaited() !== undefined).then(() => true)
      : await condition(() => cancelRequested !== null || awaited() !== undefined, wait.timeoutMs);
    waitingFor = null;
    if (cancelRequested) return null;
    const event = arrived ? awaited() : undefined;
    arrivals.length = 0;
    return finishWait({ ...waitStep, outcome: event ? 'EVENT' : 'TIMEOUT', event });
  }

  /** Mail a SEND_EMAIL step could not hand over yet gets the transactional delivery's retries. */
  async function deliverLater(retry: SendRetry): Promise<void> {
    try {
      await startChild(emailDeliveryWorkflow, {
        workflowId: `send-${retry.emailIds[0]}`,
        taskQueue: deliveryTaskQueue(workflowInfo().taskQueue),
        args: [{ projectId: input.projectId, emailIds: retry.emailIds, retryDelaysSeconds: retry.retryDelaysSeconds }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [
          { key: ProjectIdSearchAttribute, value: input.projectId },
          { key: ContactIdSearchAttribute, value: input.contactId },
          { key: EmailIdsSearchAttribute, value: retry.emailIds },
        ],
      });
    } catch (err) {
      // The delivery sweep started it first: it delivers the same emails under the same id.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
}
