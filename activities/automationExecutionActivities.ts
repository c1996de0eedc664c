import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import {
  endExecution,
  finishWait,
  runSteps,
  type EndExecutionInput,
  type StepOutcome,
  type StepsInput,
  type WaitEndInput,
  type WalkRun,
} from '../services/automation/executionWalk';

export type { ArrivedEvent, EndStatus, SendRetry, StepOutcome, StepsInput } from '../services/automation/executionWalk';

/**
 * The activities of the execution workflow: each runs a part of an execution's walk through its
 * automation's steps (services/automation/executionWalk.ts). Their names, inputs and results are
 * recorded in workflow histories and stay as they are.
 */
export function createAutomationExecutionActivities({ config, orm, mail, eventTriggers }: ActivityDeps) {
  const run: WalkRun = { services: { config, orm, transport: mail, eventTriggers }, attempt: () => Context.current().info.attempt };
  return {
    /** The walk from a step on (from the TRIGGER when `stepId` is null) until it waits or ends. */
    async runSteps(input: StepsInput): Promise<StepOutcome> {
      return runSteps(run, input);
    },

    /** The end of a DELAY or a WAIT_FOR_EVENT, and the walk on from the step after it. */
    async finishWait(input: WaitEndInput): Promise<StepOutcome> {
      return finishWait(run, input);
    },

    /** Ends an execution from outside its walk (cancelled): its status, and the step it was in. */
    async endExecution(input: EndExecutionInput): Promise<void> {
      return endExecution(orm.em.fork(), input);
    },
  };
}

export type AutomationExecutionActivities = ReturnType<typeof createAutomationExecutionActivities>;
