import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { executionRepository, type DefinitionStep, type DefinitionTransition } from '../db/workflows/executionRepository';
import { contactRepository } from '../db/contacts/contactRepository';
import { delayMs, exitReason, StepConfigError, waitForEvent } from '../automation/steps/stepConfig';
import { evaluateCondition } from '../automation/steps/conditionStep';
import { sendEmailStep } from '../automation/steps/sendEmailStep';
import { updateContactStep } from '../automation/steps/updateContactStep';
import { webhookStep, WebhookStepRetry } from '../automation/steps/webhookStep';
import { nextStepId } from '../db/workflows/workflowGraph';

/** An event handed to a waiting execution (the `eventArrived` signal). */
export interface ArrivedEvent {
  eventId: string;
  name: string;
  data: Record<string, unknown>;
  /** ISO time it was recorded: a wait takes only events recorded since it began. */
  createdAt: string;
}

/** Mail a SEND_EMAIL step could not hand over yet, for a delivery workflow with retries. */
export interface SendRetry {
  emailIds: string[];
  retryDelaysSeconds: number[];
}

export type EndStatus = 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';

/** What the walk does after a step. */
export type StepOutcome =
  | { kind: 'next'; nextStepId: string; context: Record<string, unknown>; retry?: SendRetry }
  | { kind: 'delay'; waitMs: number }
  | { kind: 'wait'; eventName: string; timeoutMs: number | null; waitingSince: string }
  | { kind: 'ended'; status: EndStatus; retry?: SendRetry };

export interface StepInput {
  executionId: string;
  /** The walk's position (0 = TRIGGER); the key of the step's history row. */
  sequence: number;
  stepId: string;
  context: Record<string, unknown>;
}

/** Attempts of a WEBHOOK whose receiver fails temporarily (5xx, network), with Temporal's backoff between them. */
const WEBHOOK_ATTEMPTS = 5;

export function createWorkflowExecutionActivities({ config, orm, mail, eventTriggers }: ActivityDeps) {
  const services = { config, orm, transport: mail, eventTriggers };

  /** Ends the execution after its last step, or answers the step after `step`. */
  async function moveOn(
    em: ReturnType<typeof orm.em.fork>,
    executionId: string,
    transitions: DefinitionTransition[],
    fromStepId: string,
    outcome: 'yes' | 'no' | 'EVENT' | 'TIMEOUT' | undefined,
    context: Record<string, unknown>,
    retry?: SendRetry,
  ): Promise<StepOutcome> {
    const next = nextStepId(transitions, fromStepId, outcome);
    if (!next) {
      await executionRepository.finish(em, executionId, { status: 'COMPLETED', context });
      return { kind: 'ended', status: 'COMPLETED', retry };
    }
    if (!(await executionRepository.markRunning(em, executionId, next, context))) return ended(em, executionId, retry);
    return { kind: 'next', nextStepId: next, context, retry };
  }

  /** The execution is no longer active (cancelled, or gone with its contact or workflow): its status as it is. */
  async function ended(em: ReturnType<typeof orm.em.fork>, executionId: string, retry?: SendRetry): Promise<StepOutcome> {
    const execution = await executionRepository.findById(em, executionId);
    const status = execution && execution.status !== 'RUNNING' && execution.status !== 'WAITING' ? execution.status : 'CANCELLED';
    return { kind: 'ended', status: status as EndStatus, retry };
  }

  async function failStep(em: ReturnType<typeof orm.em.fork>, input: StepInput, step: { id: string; type: string; name: string }, message: string): Promise<StepOutcome> {
    await executionRepository.recordStep(em, input.executionId, { sequence: input.sequence, stepId: step.id, stepType: step.type, status: 'FAILED', error: message });
    await executionRepository.finish(em, input.executionId, { status: 'FAILED', error: `Step "${step.name}" (${step.type}) failed: ${message}` });
    return { kind: 'ended', status: 'FAILED' };
  }

  /** A step deleted from the definition before the walk reached it, or while the walk waited in it. */
  async function stepGone(em: ReturnType<typeof orm.em.fork>, input: StepInput, whileWaiting: boolean): Promise<StepOutcome> {
    const reason = whileWaiting
      ? `The step ${input.stepId} was deleted from the workflow while the execution waited in it`
      : `The step ${input.stepId} was deleted from the workflow before the execution reached it`;
    await executionRepository.recordStep(em, input.executionId, { sequence: input.sequence, stepId: input.stepId, stepType: 'DELETED', status: 'SKIPPED', error: reason });
    await executionRepository.finish(em, input.executionId, { status: 'EXITED', exitReason: reason });
    return { kind: 'ended', status: 'EXITED' };
  }

  return {
    /** The execution's first step (its TRIGGER), its context and EXECUTION_HISTORY_EVENTS; null when it is no longer active (cancelled before it ran). */
    async beginExecution(input: { executionId: string }): Promise<{ triggerStepId: string; context: Record<string, unknown>; maxHistoryEvents: number | null } | null> {
      const em = orm.em.fork();
      const execution = await executionRepository.findById(em, input.executionId);
      if (!execution || (execution.status !== 'RUNNING' && execution.status !== 'WAITING')) return null;
      const [trigger] = await em.execute(`select id from workflow_steps where workflow_id = ? and type = 'TRIGGER'`, [execution.workflowId]);
      if (!trigger) {
        await executionRepository.finish(em, execution.id, { status: 'FAILED', error: 'The workflow has no TRIGGER step' });
        return null;
      }
      return { triggerStepId: trigger.id, context: execution.context, maxHistoryEvents: config.executionHistoryEvents };
    },

    /**
     * One step of the walk, as the definition has it now: does its work, writes its history row
     * and answers what comes next. DELAY and WAIT_FOR_EVENT only begin here (WAITING); the
     * workflow waits and calls finishWait.
     */
    async runStep(input: StepInput): Promise<StepOutcome> {
      const em = orm.em.fork();
      const execution = await executionRepository.findById(em, input.executionId);
      if (!execution || (execution.status !== 'RUNNING' && execution.status !== 'WAITING')) return ended(em, input.executionId);
      const step: DefinitionStep | null = await executionRepository.step(em, execution.workflowId, input.stepId);
      if (!step) return stepGone(em, input, false);
      if (execution.currentStepId !== step.id || execution.status !== 'RUNNING') {
        if (!(await executionRepository.markRunning(em, execution.id, step.id, input.context))) return ended(em, input.executionId);
      }
      const row = { sequence: input.sequence, stepId: step.id, stepType: step.type };
      const complete = async (output: unknown, outcome?: 'yes' | 'no', retry?: SendRetry, context = input.context) => {
        await executionRepository.recordStep(em, execution.id, { ...row, status: 'COMPLETED', output });
        return moveOn(em, execution.id, await executionRepository.transitionsFrom(em, step.id), step.id, outcome, context, retry);
      };

      try {
        switch (step.type) {
          case 'TRIGGER':
            return complete({ triggerEventId: execution.triggerEventId });

          case 'DELAY': {
            const waitMs = delayMs(step.config);
            await executionRepository.recordStep(em, execution.id, { ...row, status: 'WAITING', output: { waitMs } });
            if (!(await executionRepository.markWaiting(em, execution.id, step.id, { eventName: null, waitUntil: new Date(Date.now() + waitMs) }))) return ended(em, execution.id);
            return { kind: 'delay', waitMs };
          }

          case 'WAIT_FOR_EVENT': {
            const wait = waitForEvent(step.config);
            await executionRepository.recordStep(em, execution.id, { ...row, status: 'WAITING', output: { eventName: wait.eventName, timeoutMs: wait.timeoutMs } });
            const since = await executionRepository.markWaiting(em, execution.id, step.id, {
              eventName: wait.eventName,
              waitUntil: wait.timeoutMs === null ? null : new Date(Date.now() + wait.timeoutMs),
            });
            if (!since) return ended(em, execution.id);
            return { kind: 'wait', eventName: wait.eventName, timeoutMs: wait.timeoutMs, waitingSince: since.toISOString() };
          }

          case 'SEND_EMAIL': {
            const contact = await contactRepository.findById(em, execution.projectId, execution.contactId);
            if (!contact) return ended(em, execution.id);
            const sent = await sendEmailStep(em, services, {
              projectId: execution.projectId,
              executionId: execution.id,
              sequence: input.sequence,
              contact,
              context: input.context,
              config: step.config,
              templateId: step.templateId,
            });
            const retry = sent.retry.length ? { emailIds: sent.retry, retryDelaysSeconds: config.deliveryRetryDelaysSeconds } : undefined;
            return complete({ emailId: sent.emailId, to: sent.to, status: sent.status }, undefined, retry);
          }

          case 'CONDITION': {
            const result = await evaluateCondition(em, { projectId: execution.projectId, contactId: execution.contactId, context: input.context, config: step.config });
            return complete({ result, branch: result ? 'yes' : 'no' }, result ? 'yes' : 'no');
          }

          case 'UPDATE_CONTACT': {
            const contact = await contactRepository.findById(em, execution.projectId, execution.contactId);
            if (!contact) return ended(em, execution.id);
            const updated = await updateContactStep(em, { projectId: execution.projectId, contact, config: step.config });
            // Through the normal path: these events may start or wake executions (of this workflow too).
            await eventTriggers.afterEventsRecorded(execution.projectId, updated.events);
            await eventTriggers.afterContactsChanged(execution.projectId, [contact.id]);
            return complete(updated.output);
          }

          case 'WEBHOOK': {
            const contact = await contactRepository.findById(em, execution.projectId, execution.contactId);
            if (!contact) return ended(em, execution.id);
            const answer = await webhookStep(em, config, { execution, step, contact, context: input.context, attempt: Context.current().info.attempt, maxAttempts: WEBHOOK_ATTEMPTS });
            return complete(answer);
          }

          case 'EXIT': {
            await executionRepository.recordStep(em, execution.id, { ...row, status: 'COMPLETED', output: { reason: exitReason(step.config) } });
            await executionRepository.finish(em, execution.id, { status: 'EXITED', exitReason: exitReason(step.config) });
            return { kind: 'ended', status: 'EXITED' };
          }
        }
        return failStep(em, input, step, `Unknown step type ${String(step.type)}`);
      } catch (err) {
        if (err instanceof StepConfigError) return failStep(em, input, step, err.message);
        // A temporary webhook failure: Temporal tries again after its backoff.
        if (err instanceof WebhookStepRetry) throw err.cause;
        throw err;
      }
    },

    /**
     * The end of a DELAY (ELAPSED) or a WAIT_FOR_EVENT (EVENT, its data merged into the context;
     * or TIMEOUT): the step's row completes and the step after it is resolved from the definition
     * as it is now, so a step edited or spliced in meanwhile is the one followed. A wait whose
     * own step was deleted meanwhile has no way out left: the execution ends EXITED, saying so.
     */
    async finishWait(input: StepInput & { outcome: 'ELAPSED' | 'EVENT' | 'TIMEOUT'; event?: ArrivedEvent }): Promise<StepOutcome> {
      const em = orm.em.fork();
      const execution = await executionRepository.findById(em, input.executionId);
      if (!execution || (execution.status !== 'RUNNING' && execution.status !== 'WAITING')) return ended(em, input.executionId);
      const step = await executionRepository.step(em, execution.workflowId, input.stepId);
      if (!step) return stepGone(em, input, true);
      const context = input.event ? { ...input.context, ...input.event.data } : input.context;
      const output = input.event ? { outcome: input.outcome, event: { id: input.event.eventId, name: input.event.name } } : { outcome: input.outcome };
      await executionRepository.recordStep(em, execution.id, { sequence: input.sequence, stepId: step.id, stepType: step.type, status: 'COMPLETED', output });
      const transitions = await executionRepository.transitionsFrom(em, step.id);
      return moveOn(em, execution.id, transitions, step.id, input.outcome === 'ELAPSED' ? undefined : input.outcome, context);
    },

    /** Ends an execution from outside its walk (cancelled): its status, and the step it was in. */
    async endExecution(input: { executionId: string; status: 'CANCELLED'; reason: string }): Promise<void> {
      const em = orm.em.fork();
      await executionRepository.finish(em, input.executionId, { status: input.status, exitReason: input.reason });
      await executionRepository.closeOpenSteps(em, input.executionId, 'CANCELLED');
    },
  };
}

export type WorkflowExecutionActivities = ReturnType<typeof createWorkflowExecutionActivities>;
