import type { EntityManager } from '@mikro-orm/postgresql';
import { executionRepository, type DefinitionStep, type HistoryRow, type WalkState } from '../../db/automations/executionRepository';
import { contactRepository } from '../../db/contacts/contactRepository';
import type { DeliveryServices } from '../sending/recordedEmailDelivery';
import { nextStepId } from './automationGraph';
import { delayMs, exitReason, StepConfigError, waitForEvent } from './stepConfigs';
import { evaluateCondition } from './steps/conditionStep';
import { sendEmailStep } from './steps/sendEmailStep';
import { updateContactStep } from './steps/updateContactStep';
import { webhookStep, WebhookStepRetry } from './steps/webhookStep';

/**
 * The walk of an execution through its automation's steps (contract section 12), as the
 * execution workflow's activities run it (activities/automationExecutionActivities.ts): reading the
 * walk state, running consecutive steps, checkpointing their history rows, deciding the next step
 * (automationGraph's nextStepId), and stopping at a DELAY or a WAIT_FOR_EVENT, whose wait the
 * Temporal workflow keeps. Every shape here (StepsInput, StepOutcome, ArrivedEvent, SendRetry) is
 * an activity's input or result recorded in workflow histories: fields and their order stay as
 * they are, or recorded histories no longer replay.
 */

/** An event handed to a waiting execution (the `eventArrived` signal). */
export interface ArrivedEvent {
  eventId: string;
  name: string;
  data: Record<string, unknown>;
  /** ISO time it was recorded: a wait takes only events recorded since it began. */
  createdAt: string;
}

/** Mail SEND_EMAIL steps could not hand over yet, for a delivery workflow with retries. */
export interface SendRetry {
  emailIds: string[];
  retryDelaysSeconds: number[];
}

export type EndStatus = 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';

interface OutcomeExtras {
  retry?: SendRetry;
  /** Set by the first runSteps of an execution: EXECUTION_HISTORY_EVENTS (null = the workflow's default). */
  maxHistoryEvents?: number | null;
}

/** Where the walk stands after an activity: at a step to run next, in a wait, or at its end. */
export type StepOutcome = OutcomeExtras &
  (
    | { kind: 'next'; sequence: number; nextStepId: string; context: Record<string, unknown> }
    | { kind: 'delay'; sequence: number; stepId: string; context: Record<string, unknown>; waitMs: number }
    | { kind: 'wait'; sequence: number; stepId: string; context: Record<string, unknown>; eventName: string; timeoutMs: number | null; waitingSince: string }
    | { kind: 'ended'; status: EndStatus }
  );

export interface StepsInput {
  executionId: string;
  /** The walk's position (0 = TRIGGER); the key of a step's history row. */
  sequence: number;
  /** Null at the very start: the execution's TRIGGER step and recorded context. */
  stepId: string | null;
  context: Record<string, unknown>;
}

/** Attempts of a WEBHOOK whose receiver fails temporarily (5xx, network), with Temporal's backoff between them. */
const WEBHOOK_ATTEMPTS = 5;
/** Steps one activity runs in a row before handing back (a history-size check, a cancel) at most. */
const STEPS_PER_ACTIVITY = 25;

/** What a walk runs with: the services steps use, and the attempt of the activity running it (a WEBHOOK's retries). */
export interface WalkRun {
  services: DeliveryServices;
  attempt: () => number;
}

export interface WaitEndInput extends StepsInput {
  stepId: string;
  outcome: 'ELAPSED' | 'EVENT' | 'TIMEOUT';
  event?: ArrivedEvent;
}

export interface EndExecutionInput {
  executionId: string;
  status: 'CANCELLED';
  reason: string;
}

type Em = EntityManager;

/** The execution is no longer active (cancelled, or gone with its contact or workflow): its status as it is. */
async function ended(em: Em, executionId: string, extras: OutcomeExtras = {}): Promise<StepOutcome> {
  const execution = await executionRepository.findById(em, executionId);
  const status = execution && execution.status !== 'RUNNING' && execution.status !== 'WAITING' ? execution.status : 'CANCELLED';
  return { kind: 'ended', status, ...extras };
}

async function finished(
  em: Em,
  executionId: string,
  end: Parameters<typeof executionRepository.finish>[2],
  extras: OutcomeExtras,
  history: HistoryRow[] = [],
): Promise<StepOutcome> {
  if (!(await executionRepository.finish(em, executionId, end, history))) return ended(em, executionId, extras);
  return { kind: 'ended', status: end.status, ...extras };
}

/**
 * Runs steps from `start` on, as the definition read at the start of this activity has them,
 * until a wait begins (DELAY, WAIT_FOR_EVENT: WAITING, the workflow waits), the walk ends, or
 * STEPS_PER_ACTIVITY ran. Each step writes its history row at its position; a repeated activity
 * finds the rows of the steps it already ran and follows them without running them again (the
 * webhook is not called twice, the branch taken stays the branch taken).
 *
 * Rows of steps that give the same answer when repeated (TRIGGER; SEND_EMAIL, whose email id is
 * derived from the position, so a repeat finds the email it recorded) are written with the next
 * write the walk makes anyway: the wait, the end, or the row of a step that must be written at
 * once (CONDITION, WEBHOOK, UPDATE_CONTACT). That is what keeps a run of steps to a few statements.
 */
async function walk(
  em: Em,
  run: WalkRun,
  state: WalkState,
  start: { sequence: number; stepId: string; context: Record<string, unknown> },
  extras: OutcomeExtras,
): Promise<StepOutcome> {
  const { services } = run;
  const { execution } = state;
  let { sequence, stepId } = start;
  const context = start.context;
  const retry: string[] = [];
  const withRetry = (): OutcomeExtras => ({
    ...extras,
    ...(retry.length ? { retry: { emailIds: retry, retryDelaysSeconds: services.config.deliveryRetryDelaysSeconds } } : {}),
  });
  const done = new Map(state.completed.map((s) => [s.sequence, s]));
  const unwritten: Array<HistoryRow & { at: number }> = [];
  const record = (row: HistoryRow) => unwritten.push({ ...row, at: Date.now() });
  /** The rows not written yet, aged for the statement that writes them now. */
  const history = (): HistoryRow[] => {
    const now = Date.now();
    return unwritten.splice(0).map(({ at, ...row }) => ({ ...row, ageMs: now - at }));
  };
  const writeHistory = () => executionRepository.recordSteps(em, execution.id, history());
  const endedMeanwhile = async () => {
    await writeHistory();
    return ended(em, execution.id, withRetry());
  };

  for (let ran = 0; ; ran++) {
    if (ran >= STEPS_PER_ACTIVITY) {
      await writeHistory();
      return { kind: 'next', sequence, nextStepId: stepId, context, ...withRetry() };
    }
    const step: DefinitionStep | undefined = state.steps.get(stepId);
    if (!step) return stepGone(em, execution.id, sequence, stepId, false, withRetry(), history());
    const row = { sequence, stepId: step.id, stepType: step.type };
    let branch: 'yes' | 'no' | undefined;
    const before = done.get(sequence);
    try {
      if (before && before.stepId === step.id && step.type !== 'DELAY' && step.type !== 'WAIT_FOR_EVENT') {
        const output = (before.output ?? {}) as Record<string, unknown>;
        if (step.type === 'EXIT')
          return await finished(em, execution.id, { status: 'EXITED', exitReason: exitReason(step.config), context }, withRetry(), history());
        if (step.type === 'CONDITION') branch = output.branch as 'yes' | 'no';
        if (step.type === 'SEND_EMAIL' && output.status === 'QUEUED') retry.push(output.emailId as string);
      } else {
        switch (step.type) {
          case 'TRIGGER':
            record({ ...row, status: 'COMPLETED', output: { triggerEventId: execution.triggerEventId } });
            break;

          case 'DELAY': {
            const waitMs = delayMs(step.config);
            record({ ...row, status: 'WAITING', output: { waitMs } });
            const since = await executionRepository.markWaiting(
              em,
              execution.id,
              step.id,
              { eventName: null, waitUntil: new Date(Date.now() + waitMs), context },
              history(),
            );
            if (!since) return await ended(em, execution.id, withRetry());
            return { kind: 'delay', sequence, stepId: step.id, context, waitMs, ...withRetry() };
          }

          case 'WAIT_FOR_EVENT': {
            const wait = waitForEvent(step.config);
            record({ ...row, status: 'WAITING', output: { eventName: wait.eventName, timeoutMs: wait.timeoutMs } });
            const since = await executionRepository.markWaiting(
              em,
              execution.id,
              step.id,
              { eventName: wait.eventName, waitUntil: wait.timeoutMs === null ? null : new Date(Date.now() + wait.timeoutMs), context },
              history(),
            );
            if (!since) return await ended(em, execution.id, withRetry());
            return {
              kind: 'wait',
              sequence,
              stepId: step.id,
              context,
              eventName: wait.eventName,
              timeoutMs: wait.timeoutMs,
              waitingSince: since.toISOString(),
              ...withRetry(),
            };
          }

          case 'SEND_EMAIL': {
            const contact = await contactRepository.findById(em, execution.projectId, execution.contactId);
            if (!contact) return await endedMeanwhile();
            const sent = await sendEmailStep(em, services, {
              projectId: execution.projectId,
              executionId: execution.id,
              sequence,
              contact,
              context,
              config: step.config,
              templateId: step.templateId,
            });
            retry.push(...sent.retry);
            record({ ...row, status: 'COMPLETED', output: { emailId: sent.emailId, to: sent.to, status: sent.status } });
            break;
          }

          case 'CONDITION': {
            const result = await evaluateCondition(em, { projectId: execution.projectId, contactId: execution.contactId, context, config: step.config });
            branch = result ? 'yes' : 'no';
            // Written now: evaluated again later, the answer could differ.
            record({ ...row, status: 'COMPLETED', output: { result, branch } });
            await writeHistory();
            break;
          }

          case 'UPDATE_CONTACT': {
            const contact = await contactRepository.findById(em, execution.projectId, execution.contactId);
            if (!contact) return await endedMeanwhile();
            const updated = await updateContactStep(em, { projectId: execution.projectId, contact, config: step.config });
            record({ ...row, status: 'COMPLETED', output: updated.output });
            await writeHistory();
            // Through the normal path: these events may start or wake executions (of this workflow too).
            await services.eventTriggers.afterEventsRecorded(execution.projectId, updated.events);
            await services.eventTriggers.afterContactsChanged(execution.projectId, [contact.id]);
            break;
          }

          case 'WEBHOOK': {
            const contact = await contactRepository.findById(em, execution.projectId, execution.contactId);
            if (!contact) return await endedMeanwhile();
            const answer = await webhookStep(em, services.config, {
              execution,
              step,
              contact,
              context,
              attempt: run.attempt(),
              maxAttempts: WEBHOOK_ATTEMPTS,
            });
            // Written now: the receiver is not to be called again.
            record({ ...row, status: 'COMPLETED', output: answer });
            await writeHistory();
            break;
          }

          case 'EXIT': {
            record({ ...row, status: 'COMPLETED', output: { reason: exitReason(step.config) } });
            return await finished(em, execution.id, { status: 'EXITED', exitReason: exitReason(step.config), context }, withRetry(), history());
          }

          default:
            throw new StepConfigError(`Unknown step type ${String(step.type)}`);
        }
      }
    } catch (err) {
      if (err instanceof StepConfigError) {
        record({ ...row, status: 'FAILED', error: err.message });
        return finished(
          em,
          execution.id,
          { status: 'FAILED', error: `Step "${step.name}" (${step.type}) failed: ${err.message}`, context },
          withRetry(),
          history(),
        );
      }
      // A temporary failure (a webhook's 5xx, the database): Temporal tries again after its
      // backoff. The rows of the steps before it are written first, so they are not repeated.
      await writeHistory().catch(() => undefined);
      if (err instanceof WebhookStepRetry) throw err.cause;
      throw err;
    }

    const next = nextStepId(state.transitions, step.id, branch);
    if (!next) return finished(em, execution.id, { status: 'COMPLETED', context }, withRetry(), history());
    sequence++;
    stepId = next;
  }
}

/** A step deleted from the definition before the walk reached it, or while the walk waited in it. */
async function stepGone(
  em: Em,
  executionId: string,
  sequence: number,
  stepId: string,
  whileWaiting: boolean,
  extras: OutcomeExtras,
  history: HistoryRow[] = [],
): Promise<StepOutcome> {
  const reason = whileWaiting
    ? `The step ${stepId} was deleted from the workflow while the execution waited in it`
    : `The step ${stepId} was deleted from the workflow before the execution reached it`;
  return finished(em, executionId, { status: 'EXITED', exitReason: reason }, extras, [
    ...history,
    { sequence, stepId, stepType: 'DELETED', status: 'SKIPPED', error: reason },
  ]);
}

const active = (state: WalkState | null): state is WalkState => !!state && (state.execution.status === 'RUNNING' || state.execution.status === 'WAITING');

/**
 * The walk from a step on (from the TRIGGER when `stepId` is null) until it waits or ends;
 * see walk(). An execution no longer active (cancelled meanwhile) answers `ended`.
 */
export async function runSteps(run: WalkRun, input: StepsInput): Promise<StepOutcome> {
  const em = run.services.orm.em.fork();
  const state = await executionRepository.walkState(em, input.executionId, input.sequence);
  if (!active(state)) return ended(em, input.executionId);
  if (input.stepId) return walk(em, run, state, { sequence: input.sequence, stepId: input.stepId, context: input.context }, {});
  const extras = { maxHistoryEvents: run.services.config.executionHistoryEvents };
  const trigger = [...state.steps.values()].find((s) => s.type === 'TRIGGER');
  if (!trigger) return finished(em, state.execution.id, { status: 'FAILED', error: 'The workflow has no TRIGGER step' }, extras);
  return walk(em, run, state, { sequence: 0, stepId: trigger.id, context: state.execution.context }, extras);
}

/**
 * The end of a DELAY (ELAPSED) or a WAIT_FOR_EVENT (EVENT, its data merged into the context;
 * or TIMEOUT): the step's row completes and the step after it is resolved from the definition
 * as it is now, so a step edited or spliced in meanwhile is the one followed; the walk goes on
 * from there. A wait whose own step was deleted meanwhile has no way out left: the execution
 * ends EXITED, saying so.
 */
export async function finishWait(run: WalkRun, input: WaitEndInput): Promise<StepOutcome> {
  const em = run.services.orm.em.fork();
  const state = await executionRepository.walkState(em, input.executionId, input.sequence + 1);
  if (!active(state)) return ended(em, input.executionId);
  const step = state.steps.get(input.stepId);
  if (!step) return stepGone(em, state.execution.id, input.sequence, input.stepId, true, {});
  const context = input.event ? { ...input.context, ...input.event.data } : input.context;
  const output = input.event ? { outcome: input.outcome, event: { id: input.event.eventId, name: input.event.name } } : { outcome: input.outcome };
  const row: HistoryRow = { sequence: input.sequence, stepId: step.id, stepType: step.type, status: 'COMPLETED', output };
  const next = nextStepId(state.transitions, step.id, input.outcome === 'ELAPSED' ? undefined : input.outcome);
  if (!next) return finished(em, state.execution.id, { status: 'COMPLETED', context }, {}, [row]);
  if (!(await executionRepository.markRunning(em, state.execution.id, next, context, [row]))) return ended(em, state.execution.id);
  return walk(em, run, state, { sequence: input.sequence + 1, stepId: next, context }, {});
}

/** Ends an execution from outside its walk (cancelled): its status, and the step it was in. */
export async function endExecution(em: Em, input: EndExecutionInput): Promise<void> {
  await executionRepository.finish(em, input.executionId, { status: input.status, exitReason: input.reason });
  await executionRepository.closeOpenSteps(em, input.executionId, 'CANCELLED');
}
