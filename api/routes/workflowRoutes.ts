import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { isUuid, parseBody, parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import {
  createStepBody,
  createTransitionBody,
  createAutomationBody,
  DEFAULT_STEP_NAMES,
  deleteStepQuery,
  patchStepBody,
  patchAutomationBody,
  automationListQuery,
} from '../schemas/automationSchemas';
import { automationRepository, type AutomationRow } from '../../db/automations/automationRepository';
import { serializeStep, serializeTransition, serializeAutomation, serializeAutomationSummary } from '../presenters/automationPresenter';
import { graphProblems } from '../../services/automation/automationGraph';
import { automationFields } from '../../services/automation/automationFields';
import {
  addStep,
  addTransition,
  deleteAutomation,
  deleteStep,
  deleteTransition,
  updateAutomation,
  updateStep,
} from '../../services/automation/automationEditing';

/**
 * Workflow definitions (specification "Workflows (S)", contract section 12), secret key. The
 * execution endpoints (/workflows/:id/executions…) live in workflowExecutionRoutes; the editing
 * rules (the graph-edit transaction, step configs and limits, transitions) in
 * services/automation/automationEditing.ts.
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
    ctx.body = await automationFields(ctx.state.em, ctx.state.project!.id);
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
    const definition = await updateAutomation(ctx.state.em, ctx.state.project!.id, ctx.params.id, changes);
    ctx.body = { ...serializeAutomation(definition), problems: graphProblems(definition.steps, definition.transitions) };
  });

  router.delete('/workflows/:id', async (ctx) => {
    await deleteAutomation(ctx.state.em, ctx.state.project!.id, ctx.params.id);
    ctx.status = 204;
  });

  router.post('/workflows/:id/steps', async (ctx) => {
    const body = parseBody(createStepBody, ctx.request.body);
    const step = await addStep(ctx.state.em, ctx.state.project!.id, ctx.params.id, {
      type: body.type,
      name: body.name ?? DEFAULT_STEP_NAMES[body.type],
      position: body.position ?? { x: 0, y: 0 },
      config: body.config,
      templateId: body.templateId,
    });
    ctx.status = 201;
    ctx.body = serializeStep(step);
  });

  router.patch('/workflows/:id/steps/:stepId', async (ctx) => {
    const body = parseBody(patchStepBody, ctx.request.body);
    ctx.body = serializeStep(await updateStep(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.stepId, body));
  });

  router.delete('/workflows/:id/steps/:stepId', async (ctx) => {
    const { splice } = parseQuery(deleteStepQuery, ctx.query);
    await deleteStep(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.stepId, splice === 'true');
    ctx.status = 204;
  });

  router.post('/workflows/:id/transitions', async (ctx) => {
    const body = parseBody(createTransitionBody, ctx.request.body);
    const transition = await addTransition(ctx.state.em, ctx.state.project!.id, ctx.params.id, body);
    ctx.status = 201;
    ctx.body = serializeTransition(transition);
  });

  router.delete('/workflows/:id/transitions/:transitionId', async (ctx) => {
    await deleteTransition(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.transitionId);
    ctx.status = 204;
  });

  return router;
}
