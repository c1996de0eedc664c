import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { ApiError, conflict, notFound, validationFailed } from '../../lib/errors';
import { isUuid, parseBody, parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import {
  cancelAllExecutionsResponse,
  executionCountsResponse,
  executionListQuery,
  executionListResponse,
  executionResponse,
  startExecutionBody,
} from '../schemas/automationSchemas';
import { describedRoutes } from '../openapi/describedRouter';
import { automationRepository } from '../../db/automations/automationRepository';
import { contactRepository } from '../../db/contacts/contactRepository';
import { executionRepository, type ExecutionToStart } from '../../db/automations/executionRepository';
import { serializeExecution } from '../presenters/executionPresenter';
import { startWorkflow, workflowStartLogFields } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';
import { executionStartOptions, executionWorkflowId } from '../../services/automation/executionStarts';

/** Temporal calls one cancel-all makes at once. */
const PARALLEL_CANCELS = 16;

/**
 * Executions of a workflow (specification "Workflows (S)", contract section 12), secret key.
 * Registered before the definition routes, whose `/workflows/:id` would otherwise not see these.
 */
export function workflowExecutionRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Workflow executions', access: 'secret' });
  const auth = keyAuthenticated('secret', deps);

  async function loadAutomation(ctx: AppContext): Promise<{ id: string; projectId: string; allowReentry: boolean }> {
    const id = ctx.params.id;
    const automation = isUuid(id) ? await automationRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!automation) throw notFound('workflow', id);
    return { id: automation.id, projectId: automation.projectId, allowReentry: automation.allowReentry };
  }

  async function loadExecution(ctx: AppContext, automationId: string) {
    const id = ctx.params.executionId;
    const execution = isUuid(id) ? await executionRepository.findInAutomation(ctx.state.em, ctx.state.project!.id, automationId, id.toLowerCase()) : null;
    if (!execution) throw notFound('execution', id);
    return execution;
  }

  /** Cancels the Temporal workflows of executions already marked CANCELLED; one that cannot be reached stops at its next step. */
  async function cancelInTemporal(executions: ExecutionToStart[]): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < executions.length) {
        const execution = executions[next++];
        try {
          await deps.temporal.within(() => deps.temporal.client.workflow.getHandle(executionWorkflowId(execution.id)).cancel());
        } catch (err) {
          if ((err as Error)?.name === 'WorkflowNotFoundError') continue;
          deps.logger.warn({ err, executionId: execution.id }, 'could not cancel an execution workflow; it ends at its next step');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_CANCELS, executions.length) }, worker));
  }

  route.post(
    '/workflows/:id/executions/cancel-all',
    {
      summary: 'Cancel every running execution',
      description: 'Every RUNNING or WAITING execution of the workflow becomes CANCELLED; one whose run cannot be reached now stops at its next step.',
      responses: { 200: { description: 'How many executions were cancelled', schema: cancelAllExecutionsResponse } },
    },
    ...auth,
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      const cancelled = await executionRepository.cancelActive(ctx.state.em, automation.projectId, automation.id);
      await cancelInTemporal(cancelled);
      ctx.body = { cancelled: cancelled.length } satisfies z.input<typeof cancelAllExecutionsResponse>;
    },
  );

  // Declared before /workflows/:id/executions/:executionId, which would otherwise take "counts" for an id.
  route.get(
    '/workflows/:id/executions/counts',
    {
      summary: 'Count executions by status',
      description: 'How many executions the workflow has in each status, every status named (zero included).',
      responses: { 200: { description: 'Executions by status', schema: executionCountsResponse } },
    },
    ...auth,
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      ctx.body = (await executionRepository.countsByStatus(ctx.state.em, automation.projectId, automation.id)) satisfies z.input<
        typeof executionCountsResponse
      >;
    },
  );

  route.post(
    '/workflows/:id/executions',
    {
      summary: 'Start an execution',
      description:
        'Runs the workflow for one existing contact (`contactId` or `email`), enabled or not, from its TRIGGER step; `context` is the data the steps see as the trigger event’s. ' +
        'A contact that already entered a workflow without `allowReentry` is refused (409).',
      body: { schema: startExecutionBody, example: { email: 'ada@example.com', context: { plan: 'pro' } } },
      responses: { 201: { description: 'The execution, started', schema: executionResponse } },
    },
    ...auth,
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      const body = parseBody(startExecutionBody, ctx.request.body);
      const em = ctx.state.em;
      const contact = body.contactId
        ? await contactRepository.findById(em, automation.projectId, body.contactId.toLowerCase())
        : await contactRepository.findByEmail(em, automation.projectId, body.email!);
      if (!contact) throw notFound('contact', body.contactId ?? body.email);
      if (!(await automationRepository.hasTriggerStep(em, automation.id)))
        throw validationFailed([{ field: '(workflow)', message: 'The workflow has no TRIGGER step to start from', code: 'custom' }]);
      const execution = await executionRepository.createManual(em, {
        projectId: automation.projectId,
        automationId: automation.id,
        contactId: contact.id,
        context: body.context ?? {},
        allowReentry: automation.allowReentry,
      });
      if (!execution) {
        throw conflict('This contact already entered this workflow, which does not allow re-entry', { workflowId: automation.id, contactId: contact.id });
      }
      try {
        await startWorkflow(deps.temporal, 'workflowExecutionWorkflow', executionStartOptions(execution, deps.temporal.taskQueue));
      } catch (err) {
        deps.logger.error({ ...workflowStartLogFields(err), executionId: execution.id }, 'could not start an execution; withdrawn');
        await executionRepository.withdrawUnstarted(em, execution.id);
        throw workflowStartApiError(err, 'The execution could not be started; nothing was done. Try again shortly.');
      }
      ctx.status = 201;
      ctx.body = serializeExecution({ ...execution, contactEmail: contact.email }, []);
    },
  );

  route.get(
    '/workflows/:id/executions',
    {
      summary: 'List executions',
      description: 'Offset pages (`pageSize` at most 100), newest first, filtered by `status`.',
      query: executionListQuery,
      responses: { 200: { description: 'A page of executions, without their step history', schema: executionListResponse } },
    },
    ...auth,
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      const q = parseQuery(executionListQuery, ctx.query);
      const { executions, total } = await executionRepository.list(ctx.state.em, automation.projectId, automation.id, q);
      ctx.body = {
        data: executions.map((e) => serializeExecution(e)),
        page: q.page,
        pageSize: q.pageSize,
        total,
        totalPages: Math.ceil(total / q.pageSize),
      } satisfies z.input<typeof executionListResponse>;
    },
  );

  route.get(
    '/workflows/:id/executions/:executionId',
    { summary: 'Get an execution', responses: { 200: { description: 'The execution with its step history', schema: executionResponse } } },
    ...auth,
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      const execution = await loadExecution(ctx, automation.id);
      ctx.body = serializeExecution(execution, await executionRepository.steps(ctx.state.em, execution.id));
    },
  );

  /** Cancels (the record stays): answers the execution, CANCELLED. One already ended: 409 with its status. */
  route.delete(
    '/workflows/:id/executions/:executionId',
    {
      summary: 'Cancel an execution',
      description:
        'The record stays, CANCELLED. Only a RUNNING or WAITING execution can be cancelled: one already ended answers 409 with its `status` in `error.details`.',
      responses: { 200: { description: 'The execution, CANCELLED', schema: executionResponse } },
    },
    ...auth,
    async (ctx) => {
      const automation = await loadAutomation(ctx);
      const execution = await loadExecution(ctx, automation.id);
      const cancelled = await executionRepository.cancelActive(ctx.state.em, automation.projectId, automation.id, execution.id);
      if (!cancelled.length) {
        const now = await executionRepository.findById(ctx.state.em, execution.id);
        throw new ApiError(409, 'CONFLICT', `Only a RUNNING or WAITING execution can be cancelled; this one is ${now?.status ?? execution.status}`, {
          details: { status: now?.status ?? execution.status },
        });
      }
      await cancelInTemporal(cancelled);
      const now = (await executionRepository.findById(ctx.state.em, execution.id))!;
      ctx.body = serializeExecution({ ...now, contactEmail: execution.contactEmail }, await executionRepository.steps(ctx.state.em, execution.id));
    },
  );

  return router;
}
