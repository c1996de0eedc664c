import Router from '@koa/router';
import type { z } from 'zod';
import { unverifiedSenderDomain } from '../../services/domains/senderDomainLookup';
import { checkTemplate } from '../../mail/rendering/renderEmail';
import { MAX_PAGE_SIZE, MESSAGE_CONTENT_LIMITS } from '../schemas/messageContentFields';
import type { ApiDeps, AppContext, AppState } from '../state';
import { conflict, notFound, plainBadRequest, validationFailed } from '../../lib/errors';
import { isUuid, parseBody, parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { automationRepository } from '../../db/automations/automationRepository';
import { templateRepository, type TemplateFields } from '../../db/templates/templateRepository';
import { serializeTemplate } from '../presenters/templatePresenter';
import {
  createTemplateBody,
  patchTemplateBody,
  templateDuplicateResponse,
  templateFields,
  templateListQuery,
  templateListResponse,
  templatePreviewBody,
  templatePreviewResponse,
  templateResponse,
  templateTestBody,
  templateTestResponse,
  templateUsageResponse,
} from '../schemas/templateSchemas';
import { describedRoutes } from '../openapi/describedRouter';
import { previewTemplate } from '../../services/templates/templatePreview';
import { sendTemplateTest } from '../../services/templates/templateTestSend';
import { WorkflowStartError } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';

/** Limits of template fields (shared with campaigns). */
export const TEMPLATE_LIMITS = MESSAGE_CONTENT_LIMITS;
export { MAX_PAGE_SIZE };

/** The required fields whose absence or malformation the specification answers with a plain 400. */
const REQUIRED_FIELDS = ['name', 'subject', 'body', 'from'] as const;

/**
 * A subject or body that does not compile (broken Handlebars, an unknown helper, invalid MJML)
 * is refused when it is saved, with the renderer's own explanation, rather than at send time.
 * The fields are present and well-typed, so this is the 422 envelope, not the plain 400.
 */
function refuseBrokenTemplate(source: { subject: string; body: string }): void {
  const problems = checkTemplate(source);
  if (problems.length) throw validationFailed(problems.map((p) => ({ field: p.field, message: p.message, code: 'custom' })));
}

/** Templates (specification "Templates (S)", contract section 7), secret key. */
export function templateRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.use('/templates', ...keyAuthenticated('secret', deps));
  const route = describedRoutes(router, { tag: 'Templates', access: 'secret' });

  /** A non-uuid id cannot name a template: 404 like any other unknown id. */
  async function loadTemplate(ctx: AppContext) {
    const id = ctx.params.id;
    const template = isUuid(id) ? await templateRepository.findById(ctx.state.em, ctx.state.project!.id, id) : null;
    if (!template) throw notFound('template', id);
    return template;
  }

  /** The sender-domain rule (contract section 8), answered as contract section 2 says. */
  async function requireVerifiedSender(ctx: AppContext, from: string) {
    const verified = await deps.senderDomains.findVerified(ctx.state.project!.id, from);
    if (!verified) throw unverifiedSenderDomain(from);
  }

  route.get(
    '/templates',
    {
      summary: 'List templates',
      description: 'Offset pages, newest first unless `sort` and `dir` say otherwise; `pageSize` above 100 is read as 100.',
      query: templateListQuery,
      responses: { 200: { description: 'A page of templates', schema: templateListResponse } },
    },
    async (ctx) => {
      const q = parseQuery(templateListQuery, ctx.query);
      const { templates, total } = await templateRepository.list(ctx.state.em, ctx.state.project!.id, {
        page: q.page,
        pageSize: q.pageSize,
        type: q.type,
        search: q.search?.trim() || undefined,
        sort: q.sort,
        dir: q.dir,
      });
      ctx.body = {
        data: templates.map(serializeTemplate),
        total,
        page: q.page,
        pageSize: q.pageSize,
        totalPages: Math.ceil(total / q.pageSize),
      } satisfies z.input<typeof templateListResponse>;
    },
  );

  route.post(
    '/templates',
    {
      summary: 'Create a template',
      description:
        'A missing or malformed `name`, `subject`, `body` or `from` is the specification’s plain 400 `{ error }`; other fields are refused with the 422 envelope, ' +
        'as is a subject or body that does not compile (Handlebars, MJML). `from` must be covered by a verified sender domain (403).',
      body: { schema: createTemplateBody },
      plain400: true,
      responses: { 201: { description: 'The template', schema: templateResponse } },
    },
    async (ctx) => {
      const raw = ctx.request.body ?? {};
      if (typeof raw !== 'object' || Array.isArray(raw)) throw plainBadRequest('The request body must be a JSON object');
      // The specification's plain 400 for a missing or malformed required field; other fields get the 422 envelope.
      for (const field of REQUIRED_FIELDS) {
        const result = templateFields[field].safeParse((raw as Record<string, unknown>)[field]);
        if (!result.success) throw plainBadRequest(result.error.issues[0].message);
      }
      const body = parseBody(createTemplateBody, raw);
      refuseBrokenTemplate({ subject: body.subject, body: body.body });
      await requireVerifiedSender(ctx, body.from);
      const template = await templateRepository.create(ctx.state.em, ctx.state.project!.id, {
        ...body,
        description: body.description ?? null,
        fromName: body.fromName ?? null,
        replyTo: body.replyTo ?? null,
      });
      ctx.status = 201;
      ctx.body = serializeTemplate(template);
    },
  );

  /** Registered before the `:id` routes; `preview` is no id. */
  route.post(
    '/templates/preview',
    {
      summary: 'Preview a template',
      description:
        'Renders a subject and body (saved or not) as sending would: Handlebars, MJML, the unsubscribe footer of MARKETING mail and the text part, ' +
        'filled with a contact’s data (`contactId`) and `data` over it. Made for looking (contract 21): no open pixel and no click redirects, ' +
        'so links point at their targets and viewing records nothing. `variables` lists what the subject and body read. ' +
        'A template that does not compile or render is refused with the 422 envelope naming the field; an unknown contact is 404.',
      body: {
        schema: templatePreviewBody,
        example: { subject: 'Welcome, {{firstName ?? "friend"}}', body: '<p>Hello {{firstName}}</p>', type: 'MARKETING', data: { firstName: 'Ada' } },
      },
      responses: { 200: { description: 'The rendered mail and the variables it reads', schema: templatePreviewResponse } },
    },
    async (ctx) => {
      const body = parseBody(templatePreviewBody, ctx.request.body);
      ctx.body = (await previewTemplate(deps.config, ctx.state.em, ctx.state.project!.id, body)) satisfies z.input<typeof templatePreviewResponse>;
    },
  );

  route.get('/templates/:id', { summary: 'Get a template', responses: { 200: { description: 'The template', schema: templateResponse } } }, async (ctx) => {
    ctx.body = serializeTemplate(await loadTemplate(ctx));
  });

  route.patch(
    '/templates/:id',
    {
      summary: 'Update a template',
      description: 'Changes the fields given. The result must still compile (422), and a changed `from` must be covered by a verified sender domain (403).',
      body: { schema: patchTemplateBody },
      responses: { 200: { description: 'The template as updated', schema: templateResponse } },
    },
    async (ctx) => {
      const template = await loadTemplate(ctx);
      const changes: Partial<TemplateFields> = parseBody(patchTemplateBody, ctx.request.body);
      refuseBrokenTemplate({ subject: changes.subject ?? template.subject, body: changes.body ?? template.body });
      if (changes.from !== undefined && changes.from !== template.from) await requireVerifiedSender(ctx, changes.from);
      const updated = await templateRepository.update(ctx.state.em, template.projectId, template.id, changes);
      if (!updated) throw notFound('template', template.id);
      ctx.body = serializeTemplate(updated);
    },
  );

  route.delete(
    '/templates/:id',
    {
      summary: 'Delete a template',
      description: 'Refused (409, naming them) while workflow SEND_EMAIL steps use it.',
      responses: { 204: { description: 'Deleted' } },
    },
    async (ctx) => {
      const template = await loadTemplate(ctx);
      // The schema refuses the delete too (on delete restrict), should a step take the template meanwhile.
      const workflowSteps = await automationRepository.stepsUsingTemplate(ctx.state.em, template.projectId, template.id);
      if (workflowSteps.length) {
        throw conflict('The template is used by workflow SEND_EMAIL steps; change or delete those steps first', {
          resource: 'template',
          id: template.id,
          workflowSteps,
        });
      }
      const deleted = await templateRepository.delete(ctx.state.em, template.projectId, template.id);
      if (!deleted) throw notFound('template', template.id);
      ctx.status = 204;
    },
  );

  route.post(
    '/templates/:id/duplicate',
    {
      summary: 'Duplicate a template',
      description: 'A copy named `<name> (copy)`.',
      responses: { 201: { description: 'The copy’s id', schema: templateDuplicateResponse } },
    },
    async (ctx) => {
      const template = await loadTemplate(ctx);
      const copy = await templateRepository.duplicate(ctx.state.em, template.projectId, template.id, TEMPLATE_LIMITS.name);
      if (!copy) throw notFound('template', template.id);
      ctx.status = 201;
      ctx.body = { id: copy.id } satisfies z.input<typeof templateDuplicateResponse>;
    },
  );

  /** One rendered copy to one address, subject `[TEST] …`, counted nowhere (services/templates/templateTestSend.ts). */
  route.post(
    '/templates/:id/test',
    {
      summary: 'Send a test email',
      description:
        'One copy of the saved template rendered for one address (with that contact’s data, if it is one, and `data` over it), subject `[TEST] …`, ' +
        'through the one send path. It counts in no contact’s history and no template’s emails. `from` must still be covered by a verified ' +
        'sender domain (403); a suppressed address is refused (422).',
      body: { schema: templateTestBody, example: { email: 'ada@example.com' } },
      responses: { 200: { description: 'The test email was recorded and queued', schema: templateTestResponse } },
    },
    async (ctx) => {
      const template = await loadTemplate(ctx);
      const { email: address, data } = parseBody(templateTestBody, ctx.request.body);
      let sent;
      try {
        sent = await sendTemplateTest(deps, ctx.state.em, template, address, data ?? {});
      } catch (err) {
        if (err instanceof WorkflowStartError) throw workflowStartApiError(err, 'The test email could not be queued; nothing was sent. Try again shortly.');
        throw err;
      }
      ctx.body = {
        success: true,
        data: { email: sent.emailId, to: sent.to, subject: sent.subject },
        message: `Test email sent to ${sent.to}`,
      } satisfies z.input<typeof templateTestResponse>;
    },
  );

  route.get(
    '/templates/:id/usage',
    {
      summary: 'Where a template is used',
      description: 'The workflow SEND_EMAIL steps using it. Campaigns carry their own content, so `campaigns` is always empty.',
      responses: { 200: { description: 'What uses the template', schema: templateUsageResponse } },
    },
    async (ctx) => {
      const template = await loadTemplate(ctx);
      // Campaigns carry their own content (they are not made from a template), so none refers to one.
      const workflowSteps = await automationRepository.stepsUsingTemplate(ctx.state.em, template.projectId, template.id);
      ctx.body = { campaigns: [], workflowSteps } satisfies z.input<typeof templateUsageResponse>;
    },
  );

  return router;
}
