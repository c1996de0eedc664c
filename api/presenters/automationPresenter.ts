import type { z } from 'zod';
import type { AutomationDefinition, AutomationRow, StepRow, TransitionRow } from '../../db/automations/automationRepository';
import type { GraphProblem } from '../../services/automation/automationGraph';
import type { automationResponse, automationSummaryResponse, executionCountsResponse, stepResponse, transitionResponse } from '../schemas/automationSchemas';

/** The API shape of a step (contract section 12). */
export function serializeStep(step: StepRow): z.input<typeof stepResponse> {
  return {
    id: step.id,
    type: step.type,
    name: step.name,
    position: { x: step.positionX, y: step.positionY },
    config: step.config,
    templateId: step.templateId,
    createdAt: step.createdAt,
    updatedAt: step.updatedAt,
  };
}

/** The API shape of a transition (contract section 12); labels the source kind does not use are null. */
export function serializeTransition(t: TransitionRow): z.input<typeof transitionResponse> {
  return { id: t.id, fromStepId: t.fromStepId, toStepId: t.toStepId, branch: t.branch, waitOutcome: t.waitOutcome, createdAt: t.createdAt };
}

/** The workflow record's own fields, as the contract's workflow shape names them. */
function automationRecord(w: AutomationRow) {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    triggerType: w.triggerType,
    triggerConfig: { eventName: w.triggerEventName },
    enabled: w.enabled,
    allowReentry: w.allowReentry,
    firstExecutionAt: w.firstExecutionAt,
    projectId: w.projectId,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

/** The workflow without its graph (lists), with the number of its steps and of its executions by status. */
export function serializeAutomationSummary(
  w: AutomationRow,
  stepCount: number,
  executionCounts: z.input<typeof executionCountsResponse>,
): z.input<typeof automationSummaryResponse> {
  return { ...automationRecord(w), stepCount, executionCounts };
}

/** A workflow with its graph, and the problems that stop the graph from running. */
export function serializeAutomation(d: AutomationDefinition, problems: GraphProblem[]): z.input<typeof automationResponse> {
  return { ...automationRecord(d.automation), steps: d.steps.map(serializeStep), transitions: d.transitions.map(serializeTransition), problems };
}
