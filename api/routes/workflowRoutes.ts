import Router from '@koa/router';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiDeps, AppContext, AppState } from '../state';
import { ApiError, badRequest, conflict, notFound, validationFailed, type FieldError } from '../../lib/errors';
import { isUuid, parseBody, parseQuery, toFieldErrors } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import {
  createStepBody,
  createTransitionBody,
  createAutomationBody,
  DEFAULT_STEP_NAMES,
  deleteStepQuery,
  patchStepBody,
  patchAutomationBody,
  STEP_CONFIG_SCHEMAS,
  automationListQuery,
  AUTOMATION_LIMITS,
} from '../schemas/automationSchemas';
import { automationRepository, type StepRow, type AutomationRow } from '../../db/automations/automationRepository';
import { serializeStep, serializeTransition, serializeAutomation, serializeAutomationSummary } from '../presenters/automationPresenter';
import { edgeLabelKind, graphProblems, runProblems, type AddableStepType, type GraphProblem } from '../../services/automation/automationGraph';
import { contactFields } from '../../db/contacts/contactFields';
import { eventRepository } from '../../db/events/eventRepository';
import { SYSTEM_EVENT_NAMES, segmentEntryEventName, segmentExitEventName } from '../../db/events/systemEventNames';

/** How many of the newest events GET /workflows/fields reads for event data keys. */
const EVENT_FIELD_SAMPLE = 10_000;

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

/** Errors of a step config, at their place in the body (`config.recipient.customEmail`). */
function configErrors(schema: (typeof STEP_CONFIG_SCHEMAS)[AddableStepType], config: unknown): { config?: Record<string, unknown>; errors: FieldError[] } {
  const result = schema.safeParse(config);
  if (result.success) return { config: result.data, errors: [] };
  return { errors: toFieldErrors(result.error.issues).map((e) => ({ ...e, field: e.field === '(body)' ? 'config' : `config.${e.field}` })) };
}

/**
 * Workflow definitions (specification "Workflows (S)", contract section 12), secret key. The
 * execution endpoints (/workflows/:id/executions…) live in workflowExecutionRoutes.
 *
 * Edits of an ENABLED workflow are checked like enabling is: an edit after which a step that runs
 * can no longer run (a CONDITION losing a branch, a loop without a pause, …) is refused with the
 * same 422 and changes nothing. Steps that no run can reach yet are allowed while editing, so a
 * step can be added and then connected; enabling requires them connected.
 */
export function workflowRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.use('/workflows', ...keyAuthenticated('secret', deps));

  /** A non-uuid id cannot name a workflow: 404 like any other unknown id. */
  async function loadAutomation(ctx: AppContext): Promise<AutomationRow> {
    const id = ctx.params.id;
    const automation = isUuid(id) ? await automationRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!automation) throw notFound('workflow', id);
    return automation;
  }

  /**
   * Runs a change of a workflow's graph in a transaction holding the workflow's lock, then, if the
   * workflow is enabled, refuses (rolling the change back) when a step a run can reach has a problem.
   */
  async function editGraph<T>(ctx: AppContext, edit: (tx: EntityManager, automation: AutomationRow) => Promise<T>): Promise<T> {
    const id = ctx.params.id;
    if (!isUuid(id)) throw notFound('workflow', id);
    return ctx.state.em.transactional(async (tx) => {
      const automation = await automationRepository.lock(tx, ctx.state.project!.id, id.toLowerCase());
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

  const stepNotFound = (stepId: string, label = 'step') =>
    new ApiError(404, 'RESOURCE_NOT_FOUND', `Step not found in this workflow: ${stepId}`, { details: { resource: label, id: stepId } });

  /** A step of the workflow, or 404 (a non-uuid id, another workflow's step, another project's). */
  async function stepOf(em: EntityManager, automation: AutomationRow, stepId: string, label = 'step'): Promise<StepRow> {
    const step = isUuid(stepId) ? await automationRepository.findStep(em, automation.id, stepId.toLowerCase()) : null;
    if (!step) throw stepNotFound(stepId, label);
    return step;
  }

  /** A SEND_EMAIL template must be one of the project's own (422 at config.templateId). */
  async function requireTemplate(em: EntityManager, projectId: string, templateId: string): Promise<void> {
    if (!(await automationRepository.templateInProject(em, projectId, templateId))) {
      throw validationFailed([{ field: 'config.templateId', message: `Template not found in this project: ${templateId}`, code: 'custom' }]);
    }
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

  router.get('/workflows', async (ctx) => {
    const q = parseQuery(automationListQuery, ctx.query);
    const { automations, total } = await automationRepository.list(ctx.state.em, ctx.state.project!.id, {
      page: q.page,
      pageSize: q.pageSize,
      enabled: q.enabled === undefined ? undefined : q.enabled === 'true',
      eventName: q.eventName,
      search: q.search?.trim() || undefined,
      sort: q.sort,
      dir: q.dir,
    });
    ctx.body = {
      data: automations.map((w) => ({ ...serializeAutomationSummary(w), stepCount: w.stepCount })),
      total,
      page: q.page,
      pageSize: q.pageSize,
      totalPages: Math.ceil(total / q.pageSize),
    };
  });

  // Declared before /workflows/:id, which would otherwise take "fields" for an id.
  router.get('/workflows/fields', async (ctx) => {
    const em = ctx.state.em;
    const projectId = ctx.state.project!.id;
    const { fields } = await contactFields.list(em, projectId);
    const contact = fields.filter((f) => !f.field.startsWith('data.')).map((f) => ({ field: `contact.${f.field}`, type: f.type }));
    const data = fields.filter((f) => f.field.startsWith('data.')).map((f) => ({ field: f.field, type: f.type, coverage: f.coverage }));

    const rows = await automationRepository.eventDataFields(em, projectId, EVENT_FIELD_SAMPLE);
    const byName = new Map<string, Map<string, Map<string, number>>>();
    for (const row of rows) {
      const keys = byName.get(row.name) ?? new Map<string, Map<string, number>>();
      byName.set(row.name, keys);
      if (row.key === null) continue;
      const types = keys.get(row.key) ?? new Map<string, number>();
      types.set(row.type ?? 'null', (types.get(row.type ?? 'null') ?? 0) + row.n);
      keys.set(row.key, types);
    }
    const names = new Set([...(await eventRepository.names(em, projectId)), ...SYSTEM_EVENT_NAMES]);
    for (const slug of await automationRepository.trackedSegmentSlugs(em, projectId)) {
      names.add(segmentEntryEventName(slug));
      names.add(segmentExitEventName(slug));
    }
    const events = [...names].sort().map((name) => ({
      name,
      fields: [...(byName.get(name) ?? new Map()).entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, types]) => ({ field: `event.${key}`, type: [...types.entries()].sort((a, b) => b[1] - a[1])[0][0] })),
    }));
    ctx.body = { contact, data, events };
  });

  router.post('/workflows', async (ctx) => {
    const body = parseBody(createAutomationBody, ctx.request.body);
    const created = await automationRepository.create(ctx.state.em, ctx.state.project!.id, {
      name: body.name,
      description: body.description ?? null,
      eventName: body.eventName,
      allowReentry: body.allowReentry,
      triggerStepName: DEFAULT_STEP_NAMES.TRIGGER,
    });
    ctx.status = 201;
    ctx.body = { ...serializeAutomation(created), problems: graphProblems(created.steps, created.transitions) };
  });

  router.get('/workflows/:id', async (ctx) => {
    const automation = await loadAutomation(ctx);
    const definition = { automation, ...(await automationRepository.graph(ctx.state.em, automation)) };
    ctx.body = { ...serializeAutomation(definition), problems: graphProblems(definition.steps, definition.transitions) };
  });

  router.patch('/workflows/:id', async (ctx) => {
    const changes = parseBody(patchAutomationBody, ctx.request.body);
    const id = ctx.params.id;
    if (!isUuid(id)) throw notFound('workflow', id);
    const updated = await ctx.state.em.transactional(async (tx) => {
      const automation = await automationRepository.lock(tx, ctx.state.project!.id, id.toLowerCase());
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
    const graph = await automationRepository.graph(ctx.state.em, updated);
    ctx.body = { ...serializeAutomation({ automation: updated, ...graph }), problems: graphProblems(graph.steps, graph.transitions) };
  });

  router.delete('/workflows/:id', async (ctx) => {
    const id = ctx.params.id;
    const result = isUuid(id) ? await automationRepository.deleteUnlessActive(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : 'missing';
    if (result === 'missing') throw notFound('workflow', id);
    if (result !== 'deleted') {
      throw conflict(
        `The workflow has ${result.active} running or waiting execution(s); cancel them first (POST /workflows/${id}/executions/cancel-all) or let them finish`,
        { resource: 'workflow', id, activeExecutions: result.active },
      );
    }
    ctx.status = 204;
  });

  router.post('/workflows/:id/steps', async (ctx) => {
    const body = parseBody(createStepBody, ctx.request.body);
    const config = mergeTemplateId(body.type, body.config, body.templateId);
    const checked = configErrors(STEP_CONFIG_SCHEMAS[body.type], config);
    if (checked.errors.length) throw validationFailed(checked.errors);
    const templateId = body.type === 'SEND_EMAIL' ? (checked.config!.templateId as string) : null;
    if (templateId) await requireTemplate(ctx.state.em, ctx.state.project!.id, templateId);
    const step = await editGraph(ctx, async (tx, automation) => {
      if ((await automationRepository.stepCount(tx, automation.id)) >= AUTOMATION_LIMITS.steps) {
        throw validationFailed([{ field: 'type', message: `A workflow holds at most ${AUTOMATION_LIMITS.steps} steps`, code: 'too_big' }]);
      }
      return automationRepository.insertStep(tx, automation.id, {
        type: body.type,
        name: body.name ?? DEFAULT_STEP_NAMES[body.type],
        positionX: body.position?.x ?? 0,
        positionY: body.position?.y ?? 0,
        config: checked.config!,
        templateId,
      });
    });
    ctx.status = 201;
    ctx.body = serializeStep(step);
  });

  router.patch('/workflows/:id/steps/:stepId', async (ctx) => {
    const body = parseBody(patchStepBody, ctx.request.body);
    const automation = await loadAutomation(ctx);
    const current = await stepOf(ctx.state.em, automation, ctx.params.stepId);
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
      const checked = configErrors(STEP_CONFIG_SCHEMAS[type], config);
      if (checked.errors.length) throw validationFailed(checked.errors);
      changes.config = checked.config;
      if (type === 'SEND_EMAIL') {
        changes.templateId = checked.config!.templateId as string;
        await requireTemplate(ctx.state.em, automation.projectId, changes.templateId);
      }
    }
    const step = await editGraph(
      ctx,
      async (tx) => (await automationRepository.updateStep(tx, automation.id, current.id, changes)) ?? Promise.reject(stepNotFound(ctx.params.stepId)),
    );
    ctx.body = serializeStep(step);
  });

  router.delete('/workflows/:id/steps/:stepId', async (ctx) => {
    const { splice } = parseQuery(deleteStepQuery, ctx.query);
    const automation = await loadAutomation(ctx);
    const step = await stepOf(ctx.state.em, automation, ctx.params.stepId);
    if (step.type === 'TRIGGER') throw badRequest('The TRIGGER step cannot be deleted; it goes with the workflow (DELETE /workflows/:id)');
    await editGraph(
      ctx,
      async (tx) => (await automationRepository.deleteStep(tx, automation.id, step.id, splice === 'true')) ?? Promise.reject(stepNotFound(ctx.params.stepId)),
    );
    ctx.status = 204;
  });

  router.post('/workflows/:id/transitions', async (ctx) => {
    const body = parseBody(createTransitionBody, ctx.request.body);
    const automation = await loadAutomation(ctx);
    const from = await stepOf(ctx.state.em, automation, body.fromStepId, 'fromStep');
    const to = await stepOf(ctx.state.em, automation, body.toStepId, 'toStep');
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
    const transition = await editGraph(ctx, async (tx) => {
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
    ctx.status = 201;
    ctx.body = serializeTransition(transition);
  });

  router.delete('/workflows/:id/transitions/:transitionId', async (ctx) => {
    const transitionId = ctx.params.transitionId;
    await editGraph(ctx, async (tx, automation) => {
      const deleted = isUuid(transitionId) && (await automationRepository.deleteTransition(tx, automation.id, transitionId.toLowerCase()));
      if (!deleted)
        throw new ApiError(404, 'RESOURCE_NOT_FOUND', `Transition not found in this workflow: ${transitionId}`, {
          details: { resource: 'transition', id: transitionId },
        });
    });
    ctx.status = 204;
  });

  return router;
}
