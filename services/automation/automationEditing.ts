import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError, badRequest, conflict, notFound, validationFailed, type FieldError } from '../../lib/errors';
import { isUuid } from '../../lib/uuid';
import { toFieldErrors } from '../../lib/zodIssues';
import {
  automationRepository,
  type AutomationDefinition,
  type AutomationRow,
  type StepRow,
  type TransitionRow,
} from '../../db/automations/automationRepository';
import type { Branch, WaitOutcome } from '../../db/automations/automationSteps';
import { edgeLabelKind, graphProblems, runProblems, type AddableStepType, type GraphProblem } from './automationGraph';
import { STEP_CONFIG_SCHEMAS } from './stepConfigs';

/**
 * Editing a workflow's definition (specification "Workflows (S)", contract section 12): its
 * settings, steps and transitions. Ids are taken as the client wrote them (any case): a non-uuid
 * id cannot name anything and is answered like an unknown one (404), and 404s name the id as given.
 *
 * Edits of an ENABLED workflow are checked like enabling is: an edit after which a step that runs
 * can no longer run (a CONDITION losing a branch, a loop without a pause, …) is refused with the
 * same 422 and changes nothing. Steps that no run can reach yet are allowed while editing, so a
 * step can be added and then connected; enabling requires them connected.
 */

/** Steps of one workflow, TRIGGER included: far above any real automation, and a bound on every graph check. */
export const MAX_AUTOMATION_STEPS = 500;

/** The 422 naming each problem of a graph: one error item per problem, and the problems in `details`. */
function graphRefused(problems: GraphProblem[], what: string): ApiError {
  const errors: FieldError[] = problems.map((p) => ({
    field: p.transitionId ? `transitions.${p.transitionId}` : p.stepId ? `steps.${p.stepId}` : 'steps',
    message: p.message,
    code: 'custom',
  }));
  return new ApiError(422, 'VALIDATION_ERROR', 'Request validation failed', {
    errors,
    details: { reason: what, problems },
  });
}

const stepNotFound = (stepId: string, label = 'step') =>
  new ApiError(404, 'RESOURCE_NOT_FOUND', `Step not found in this workflow: ${stepId}`, { details: { resource: label, id: stepId } });

/** Errors of a step config, at their place in the body (`config.recipient.customEmail`). */
function checkedConfig(type: AddableStepType, config: unknown): Record<string, unknown> {
  const result = STEP_CONFIG_SCHEMAS[type].safeParse(config);
  if (result.success) return result.data as Record<string, unknown>;
  throw validationFailed(toFieldErrors(result.error.issues).map((e) => ({ ...e, field: e.field === '(body)' ? 'config' : `config.${e.field}` })));
}

/** `templateId` may come at the step's top level (the step shape) or in config: one value. */
function mergeTemplateId(type: string, config: Record<string, unknown>, topLevel: unknown): Record<string, unknown> {
  if (topLevel === undefined || topLevel === null) return config;
  if (type !== 'SEND_EMAIL') throw validationFailed([{ field: 'templateId', message: 'templateId belongs to SEND_EMAIL steps only', code: 'custom' }]);
  if (config.templateId !== undefined && config.templateId !== topLevel) {
    throw validationFailed([{ field: 'templateId', message: 'templateId and config.templateId disagree; send one of them', code: 'custom' }]);
  }
  return { ...config, templateId: topLevel };
}

/** A SEND_EMAIL template must be one of the project's own (422 at config.templateId). */
async function requireTemplate(em: EntityManager, projectId: string, templateId: string): Promise<void> {
  if (!(await automationRepository.templateInProject(em, projectId, templateId))) {
    throw validationFailed([{ field: 'config.templateId', message: `Template not found in this project: ${templateId}`, code: 'custom' }]);
  }
}

async function findAutomation(em: EntityManager, projectId: string, id: string): Promise<AutomationRow> {
  const automation = isUuid(id) ? await automationRepository.findById(em, projectId, id.toLowerCase()) : null;
  if (!automation) throw notFound('workflow', id);
  return automation;
}

/** A step of the workflow, or 404 (a non-uuid id, another workflow's step, another project's). */
async function findStep(em: EntityManager, automation: AutomationRow, stepId: string, label = 'step'): Promise<StepRow> {
  const step = isUuid(stepId) ? await automationRepository.findStep(em, automation.id, stepId.toLowerCase()) : null;
  if (!step) throw stepNotFound(stepId, label);
  return step;
}

/**
 * Runs a change of a workflow's graph in a transaction holding the workflow's lock, then, if the
 * workflow is enabled, refuses (rolling the change back) when a step a run can reach has a problem.
 */
async function editGraph<T>(em: EntityManager, projectId: string, id: string, edit: (tx: EntityManager, automation: AutomationRow) => Promise<T>): Promise<T> {
  if (!isUuid(id)) throw notFound('workflow', id);
  return em.transactional(async (tx) => {
    const automation = await automationRepository.lock(tx, projectId, id.toLowerCase());
    if (!automation) throw notFound('workflow', id);
    const result = await edit(tx, automation);
    if (automation.enabled) {
      const { steps, transitions } = await automationRepository.graph(tx, automation);
      const problems = runProblems(steps, transitions);
      if (problems.length)
        throw graphRefused(problems, 'The workflow is enabled and this change would stop it from running; disable it first or keep its graph whole');
    }
    await automationRepository.touch(tx, automation.id);
    return result;
  });
}

export interface AutomationChanges {
  name?: string;
  description?: string | null;
  eventName?: string;
  enabled?: boolean;
  allowReentry?: boolean;
}

/**
 * PATCH /workflows/:id, under the workflow's lock: the trigger event is fixed once the workflow
 * has run (409), and enabling needs a graph that can run (422). Answers the definition after it.
 */
export async function updateAutomation(em: EntityManager, projectId: string, id: string, changes: AutomationChanges): Promise<AutomationDefinition> {
  if (!isUuid(id)) throw notFound('workflow', id);
  const updated = await em.transactional(async (tx) => {
    const automation = await automationRepository.lock(tx, projectId, id.toLowerCase());
    if (!automation) throw notFound('workflow', id);
    if (changes.eventName !== undefined && changes.eventName !== automation.triggerEventName && automation.firstExecutionAt) {
      throw conflict('The trigger event cannot change once the workflow has run; create a new workflow for another event', {
        resource: 'workflow',
        id: automation.id,
        eventName: automation.triggerEventName,
        firstExecutionAt: automation.firstExecutionAt,
      });
    }
    if (changes.enabled === true && !automation.enabled) {
      const { steps, transitions } = await automationRepository.graph(tx, automation);
      const problems = graphProblems(steps, transitions);
      if (problems.length) throw graphRefused(problems, 'The workflow cannot be enabled until its graph can run');
    }
    return automationRepository.update(tx, automation.id, changes);
  });
  return { automation: updated, ...(await automationRepository.graph(em, updated)) };
}

/** Deletes a workflow unless executions still run (409: cancel them or let them finish). */
export async function deleteAutomation(em: EntityManager, projectId: string, id: string): Promise<void> {
  const result = isUuid(id) ? await automationRepository.deleteUnlessActive(em, projectId, id.toLowerCase()) : 'missing';
  if (result === 'missing') throw notFound('workflow', id);
  if (result !== 'deleted') {
    throw conflict(
      `The workflow has ${result.active} running or waiting execution(s); cancel them first (POST /workflows/${id}/executions/cancel-all) or let them finish`,
      { resource: 'workflow', id, activeExecutions: result.active },
    );
  }
}

export interface NewStepRequest {
  type: AddableStepType;
  name: string;
  position: { x: number; y: number };
  config: Record<string, unknown>;
  /** The step shape's top-level templateId (SEND_EMAIL), accepted as well as config.templateId. */
  templateId: unknown;
}

/**
 * Adds a step: its config checked against its kind (422 at `config.…`), a SEND_EMAIL's template one
 * of the project's own, and at most MAX_AUTOMATION_STEPS steps (counted under the lock).
 */
export async function addStep(em: EntityManager, projectId: string, automationId: string, step: NewStepRequest): Promise<StepRow> {
  const config = checkedConfig(step.type, mergeTemplateId(step.type, step.config, step.templateId));
  const templateId = step.type === 'SEND_EMAIL' ? (config.templateId as string) : null;
  if (templateId) await requireTemplate(em, projectId, templateId);
  return editGraph(em, projectId, automationId, async (tx, automation) => {
    if ((await automationRepository.stepCount(tx, automation.id)) >= MAX_AUTOMATION_STEPS) {
      throw validationFailed([{ field: 'type', message: `A workflow holds at most ${MAX_AUTOMATION_STEPS} steps`, code: 'too_big' }]);
    }
    return automationRepository.insertStep(tx, automation.id, {
      type: step.type,
      name: step.name,
      positionX: step.position.x,
      positionY: step.position.y,
      config,
      templateId,
    });
  });
}

export interface StepChanges {
  name?: string;
  position?: { x: number; y: number };
  /** Replaces the whole config when given. */
  config?: Record<string, unknown>;
  templateId?: unknown;
  /** Accepted only when it is the step's own type: a step keeps its type. */
  type?: unknown;
}

/**
 * Changes a step's name, position or config. The TRIGGER step has no config (its event is the
 * workflow's). A top-level `templateId` alone replaces the template and keeps the rest of the config.
 */
export async function updateStep(em: EntityManager, projectId: string, automationId: string, stepId: string, body: StepChanges): Promise<StepRow> {
  const automation = await findAutomation(em, projectId, automationId);
  const current = await findStep(em, automation, stepId);
  if (body.type !== undefined && body.type !== current.type) {
    throw validationFailed([{ field: 'type', message: 'A step keeps its type; delete it and add a step of the other type', code: 'custom' }]);
  }
  const changes: Parameters<typeof automationRepository.updateStep>[3] = {};
  if (body.name !== undefined) changes.name = body.name;
  if (body.position) {
    changes.positionX = body.position.x;
    changes.positionY = body.position.y;
  }
  if (current.type === 'TRIGGER') {
    if (body.config !== undefined || body.templateId !== undefined) {
      throw validationFailed([
        { field: 'config', message: "The TRIGGER step has no config: its event is the workflow's triggerConfig (PATCH /workflows/:id)", code: 'custom' },
      ]);
    }
  } else if (body.config !== undefined || body.templateId !== undefined) {
    const type = current.type;
    const { templateId: _kept, ...withoutTemplate } = current.config;
    const config = mergeTemplateId(
      type,
      body.config ?? (body.templateId !== undefined && body.templateId !== null ? withoutTemplate : current.config),
      body.templateId,
    );
    changes.config = checkedConfig(type, config);
    if (type === 'SEND_EMAIL') {
      changes.templateId = changes.config.templateId as string;
      await requireTemplate(em, automation.projectId, changes.templateId);
    }
  }
  return editGraph(
    em,
    projectId,
    automationId,
    async (tx) => (await automationRepository.updateStep(tx, automation.id, current.id, changes)) ?? Promise.reject(stepNotFound(stepId)),
  );
}

/** Deletes a step and its transitions; with `splice`, the transitions into it lead to its successor. The TRIGGER stays. */
export async function deleteStep(em: EntityManager, projectId: string, automationId: string, stepId: string, splice: boolean): Promise<void> {
  const automation = await findAutomation(em, projectId, automationId);
  const step = await findStep(em, automation, stepId);
  if (step.type === 'TRIGGER') throw badRequest('The TRIGGER step cannot be deleted; it goes with the workflow (DELETE /workflows/:id)');
  await editGraph(
    em,
    projectId,
    automationId,
    async (tx) => (await automationRepository.deleteStep(tx, automation.id, step.id, splice)) ?? Promise.reject(stepNotFound(stepId)),
  );
}

export interface NewTransitionRequest {
  fromStepId: string;
  toStepId: string;
  branch?: Branch | null;
  waitOutcome?: WaitOutcome | null;
}

/**
 * Connects two steps of the workflow. The label must fit the step it leaves: a CONDITION's `branch`,
 * a WAIT_FOR_EVENT's `waitOutcome` (EVENT when not given), none for the others; each way out of a
 * step is taken once (409 naming the transition that has it).
 */
export async function addTransition(em: EntityManager, projectId: string, automationId: string, body: NewTransitionRequest): Promise<TransitionRow> {
  const automation = await findAutomation(em, projectId, automationId);
  const from = await findStep(em, automation, body.fromStepId, 'fromStep');
  const to = await findStep(em, automation, body.toStepId, 'toStep');
  const errors: FieldError[] = [];
  if (from.id === to.id) errors.push({ field: 'toStepId', message: 'A step cannot lead to itself', code: 'custom' });
  if (to.type === 'TRIGGER') errors.push({ field: 'toStepId', message: 'No transition leads into the TRIGGER step', code: 'custom' });
  if (from.type === 'EXIT') errors.push({ field: 'fromStepId', message: 'An EXIT step ends the run; nothing follows it', code: 'custom' });
  const kind = edgeLabelKind(from.type);
  let branch = body.branch ?? null;
  let waitOutcome = body.waitOutcome ?? null;
  if (kind === 'branch') {
    if (!branch) errors.push({ field: 'branch', message: 'A transition out of a CONDITION step needs branch: yes or no', code: 'invalid_type' });
    if (waitOutcome) errors.push({ field: 'waitOutcome', message: 'waitOutcome belongs to transitions out of WAIT_FOR_EVENT steps', code: 'custom' });
  } else if (kind === 'waitOutcome') {
    if (branch) errors.push({ field: 'branch', message: 'branch belongs to transitions out of CONDITION steps', code: 'custom' });
    // The event arriving is the usual way on; TIMEOUT has to be asked for.
    waitOutcome = waitOutcome ?? 'EVENT';
  } else {
    if (branch) errors.push({ field: 'branch', message: `branch belongs to transitions out of CONDITION steps, not ${from.type}`, code: 'custom' });
    if (waitOutcome)
      errors.push({ field: 'waitOutcome', message: `waitOutcome belongs to transitions out of WAIT_FOR_EVENT steps, not ${from.type}`, code: 'custom' });
    branch = null;
    waitOutcome = null;
  }
  if (errors.length) throw validationFailed(errors);
  return editGraph(em, projectId, automationId, async (tx) => {
    const existing = await automationRepository.findWayOut(tx, automation.id, { fromStepId: from.id, branch, waitOutcome });
    if (existing) {
      const what = branch ? `a "${branch}" branch` : waitOutcome ? `a ${waitOutcome} transition` : 'a next step';
      throw conflict(`The ${from.type} step already has ${what}; delete transition ${existing.id} first`, {
        resource: 'transition',
        existingTransitionId: existing.id,
        fromStepId: from.id,
        toStepId: existing.toStepId,
      });
    }
    return automationRepository.insertTransition(tx, automation.id, { fromStepId: from.id, toStepId: to.id, branch, waitOutcome });
  });
}

export async function deleteTransition(em: EntityManager, projectId: string, automationId: string, transitionId: string): Promise<void> {
  await editGraph(em, projectId, automationId, async (tx, automation) => {
    const deleted = isUuid(transitionId) && (await automationRepository.deleteTransition(tx, automation.id, transitionId.toLowerCase()));
    if (!deleted)
      throw new ApiError(404, 'RESOURCE_NOT_FOUND', `Transition not found in this workflow: ${transitionId}`, {
        details: { resource: 'transition', id: transitionId },
      });
  });
}
