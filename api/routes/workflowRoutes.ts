import Router from '@koa/router';
import type { z } from 'zod';
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
  AUTOMATION_LIMITS,
  automationFieldsResponse,
  automationListResponse,
  automationResponse,
  stepResponse,
  transitionResponse,
} from '../schemas/automationSchemas';
import { describedRoutes } from '../openapi/describedRouter';
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
  const route = describedRoutes(router, { tag: 'Workflows', access: 'secret' });
  router.use('/workflows', ...keyAuthenticated('secret', deps));

  /** A non-uuid id cannot name a workflow: 404 like any other unknown id. */
  async function loadAutomation(ctx: AppContext): Promise<AutomationRow> {
    const id = ctx.params.id;
    const automation = isUuid(id) ? await automationRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!automation) throw notFound('workflow', id);
    return automation;
  }

  route.get(
    '/workflows',
    {
      summary: 'List workflows',
      description:
        'Offset pages (`pageSize` at most 100), filtered by `enabled`, trigger `eventName` and a `search` of the name. ' +
        'Each workflow comes with `stepCount` and `executionCounts`, its executions by status.',
      query: automationListQuery,
      responses: { 200: { description: 'A page of workflows, without their graphs', schema: automationListResponse } },
    },
    async (ctx) => {
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
        data: automations.map((w) => serializeAutomationSummary(w, w.stepCount, w.executionCounts)),
        total,
        page: q.page,
        pageSize: q.pageSize,
        totalPages: Math.ceil(total / q.pageSize),
      } satisfies z.input<typeof automationListResponse>;
    },
  );

  // Declared before /workflows/:id, which would otherwise take "fields" for an id.
  route.get(
    '/workflows/fields',
    {
      summary: 'List the fields workflows may name',
      description:
        'What triggers, WAIT_FOR_EVENT steps and CONDITION steps may refer to: the contact’s fields and data keys (with the share of contacts that have each), ' +
        'and every event name a workflow could wait for (recorded by the project, recorded by Mailroom itself, tracked segments’ entry and exit) ' +
        'with the data keys of its newest 10,000 events.',
      responses: { 200: { description: 'Contact fields, data keys and events', schema: automationFieldsResponse } },
    },
    async (ctx) => {
      ctx.body = (await automationFields(ctx.state.em, ctx.state.project!.id)) satisfies z.input<typeof automationFieldsResponse>;
    },
  );

  route.post(
    '/workflows',
    {
      summary: 'Create a workflow',
      description: 'Created disabled, with its TRIGGER step; add steps and transitions, then enable it with PATCH.',
      body: { schema: createAutomationBody, example: { name: 'Welcome series', eventName: 'user.signed_up', description: 'Greets new users' } },
      responses: { 201: { description: 'The workflow, with its TRIGGER step', schema: automationResponse } },
    },
    async (ctx) => {
      const body = parseBody(createAutomationBody, ctx.request.body);
      const created = await automationRepository.create(ctx.state.em, ctx.state.project!.id, {
        name: body.name,
        description: body.description ?? null,
        eventName: body.eventName,
        allowReentry: body.allowReentry,
        triggerStepName: DEFAULT_STEP_NAMES.TRIGGER,
      });
      ctx.status = 201;
      ctx.body = serializeAutomation(created, graphProblems(created.steps, created.transitions));
    },
  );

  route.get(
    '/workflows/:id',
    {
      summary: 'Get a workflow',
      responses: { 200: { description: 'The workflow with its steps, transitions and what stops it from running', schema: automationResponse } },
    },
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      const definition = { automation, ...(await automationRepository.graph(ctx.state.em, automation)) };
      ctx.body = serializeAutomation(definition, graphProblems(definition.steps, definition.transitions));
    },
  );

  route.patch(
    '/workflows/:id',
    {
      summary: 'Update a workflow',
      description:
        'Name, description, trigger event (`eventName` or `triggerConfig.eventName`; fixed once the workflow has run), `allowReentry`, and `enabled`. ' +
        'Enabling refuses (422) a graph with problems.',
      body: { schema: patchAutomationBody, example: { enabled: true } },
      responses: { 200: { description: 'The workflow as changed', schema: automationResponse } },
    },
    async (ctx) => {
      const changes = parseBody(patchAutomationBody, ctx.request.body);
      const definition = await updateAutomation(ctx.state.em, ctx.state.project!.id, ctx.params.id, changes);
      ctx.body = serializeAutomation(definition, graphProblems(definition.steps, definition.transitions));
    },
  );

  route.delete(
    '/workflows/:id',
    { summary: 'Delete a workflow', responses: { 204: { description: 'Deleted, with its steps, transitions and executions' } } },
    async (ctx) => {
      await deleteAutomation(ctx.state.em, ctx.state.project!.id, ctx.params.id);
      ctx.status = 204;
    },
  );

  route.post(
    '/workflows/:id/steps',
    {
      summary: 'Add a step',
      description:
        '`config` is checked against the kind’s schema (the `…StepConfig` schemas); a SEND_EMAIL step’s template must belong to the project. ' +
        `A workflow has at most ${AUTOMATION_LIMITS.steps} steps. Link the step with transitions.`,
      body: { schema: createStepBody, example: { type: 'DELAY', name: 'Wait a day', config: { amount: 1, unit: 'days' }, position: { x: 0, y: 200 } } },
      responses: { 201: { description: 'The step', schema: stepResponse } },
    },
    async (ctx) => {
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
    },
  );

  route.patch(
    '/workflows/:id/steps/:stepId',
    {
      summary: 'Update a step',
      description: 'The kind stays; `config`, when given, replaces the whole config and is checked against the kind’s schema.',
      body: { schema: patchStepBody },
      responses: { 200: { description: 'The step as changed', schema: stepResponse } },
    },
    async (ctx) => {
      const body = parseBody(patchStepBody, ctx.request.body);
      ctx.body = serializeStep(await updateStep(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.stepId, body));
    },
  );

  route.delete(
    '/workflows/:id/steps/:stepId',
    {
      summary: 'Delete a step',
      description:
        'Its transitions go with it; with `splice=true`, the transitions into it lead to its successor instead. The TRIGGER step cannot be deleted. ' +
        'On an enabled workflow, a graph change that would stop it from running is refused (422) and nothing changes.',
      query: deleteStepQuery,
      responses: { 204: { description: 'Deleted' } },
    },
    async (ctx) => {
      const { splice } = parseQuery(deleteStepQuery, ctx.query);
      await deleteStep(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.stepId, splice === 'true');
      ctx.status = 204;
    },
  );

  route.post(
    '/workflows/:id/transitions',
    {
      summary: 'Add a transition',
      description: 'Out of a CONDITION a `branch` (yes, no), out of a WAIT_FOR_EVENT a `waitOutcome` (EVENT, TIMEOUT), out of other kinds neither.',
      body: { schema: createTransitionBody },
      responses: { 201: { description: 'The transition', schema: transitionResponse } },
    },
    async (ctx) => {
      const body = parseBody(createTransitionBody, ctx.request.body);
      const transition = await addTransition(ctx.state.em, ctx.state.project!.id, ctx.params.id, body);
      ctx.status = 201;
      ctx.body = serializeTransition(transition);
    },
  );

  route.delete('/workflows/:id/transitions/:transitionId', { summary: 'Delete a transition', responses: { 204: { description: 'Deleted' } } }, async (ctx) => {
    await deleteTransition(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.transitionId);
    ctx.status = 204;
  });

  return router;
}
