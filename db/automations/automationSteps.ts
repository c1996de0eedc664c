/**
 * What an automation is made of, as the database stores it (contract section 12): the step kinds,
 * a CONDITION's branches, a WAIT_FOR_EVENT's outcomes, and the step and transition rows the graph
 * rules (services/automation/automationGraph.ts) read.
 */

export const STEP_TYPES = ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT'] as const;
export type StepType = (typeof STEP_TYPES)[number];

/** The kinds a client may add: the TRIGGER step comes with the workflow and leaves with it. */
export const ADDABLE_STEP_TYPES = ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT'] as const;
export type AddableStepType = (typeof ADDABLE_STEP_TYPES)[number];

export const BRANCHES = ['yes', 'no'] as const;
export type Branch = (typeof BRANCHES)[number];
export const WAIT_OUTCOMES = ['EVENT', 'TIMEOUT'] as const;
export type WaitOutcome = (typeof WAIT_OUTCOMES)[number];

/** What a step's run decided: a CONDITION's branch, a WAIT_FOR_EVENT's outcome, nothing for the others. */
export type StepOutcome = Branch | WaitOutcome;

export interface GraphStep {
  id: string;
  type: StepType;
  config: Record<string, unknown>;
  /** SEND_EMAIL: the template still exists in the workflow's project (false when it is gone or unset). */
  templateAvailable?: boolean;
}

export interface GraphTransition {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: Branch | null;
  waitOutcome: WaitOutcome | null;
}
