import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { parseBody } from '../http/validation';
import { notFound, validationFailed, type FieldError } from '../../lib/errors';
import { keyAuthenticated } from '../auth/apiKey';
import { idempotency } from '../middleware/idempotency';
import { decodedBase64Size, sendBody, type SendBody } from '../schemas/sendSchemas';
import type { EmailAttachment } from '../../db/emails/emailRepository';
import { attachmentsLimitProblem, sendTransactional } from '../../services/sending/transactionalSend';
import { templateRepository } from '../../db/templates/templateRepository';
import { unverifiedSenderDomain } from '../../services/domains/senderDomainLookup';
import { checkTemplate, type TemplateType } from '../../mail/rendering/renderEmail';
import { WorkflowStartError } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';

interface Recipient {
  email: string;
  name: string | null;
}

/** What every recipient of one send gets, before personalisation. */
interface SendPlan {
  templateId: string | null;
  type: TemplateType;
  subject: string;
  body: string;
  from: { address: string; name: string | null };
  replyTo: string | null;
  senderDomain: string;
}

/**
 * POST /v1/send (secret key): validates the whole request before anything is written (template,
 * sender domain, attachments), then hands it to the one send service
 * (services/sending/transactionalSend.ts, which the SMTP relay uses too); answers once every email
 * is recorded and its delivery durably scheduled. Delivery itself is asynchronous and retried.
 */
export function sendRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const { config } = deps;

  async function planOf(ctx: AppContext, body: SendBody): Promise<SendPlan> {
    const projectId = ctx.state.project!.id;
    const template = body.template ? await templateRepository.findById(ctx.state.em, projectId, body.template) : null;
    if (body.template && !template) throw notFound('template', body.template);

    const missing: FieldError[] = [];
    const subject = body.subject ?? template?.subject;
    const html = body.body ?? template?.body;
    const fromAddress = typeof body.from === 'string' ? body.from : (body.from?.email ?? template?.from);
    if (!subject) missing.push({ field: 'subject', message: 'subject is required when no template is given', code: 'invalid_type' });
    if (!html) missing.push({ field: 'body', message: 'body is required when no template is given', code: 'invalid_type' });
    if (!fromAddress) missing.push({ field: 'from', message: 'from is required unless the template has one', code: 'invalid_type' });
    if (missing.length) throw validationFailed(missing);

    const problems = checkTemplate({ subject: subject!, body: html! });
    if (problems.length)
      throw validationFailed(problems.map((p) => ({ field: body.template && !body[p.field] ? 'template' : p.field, message: p.message, code: 'custom' })));

    const domain = await deps.senderDomains.findVerified(projectId, fromAddress!);
    if (!domain) throw unverifiedSenderDomain(fromAddress!);

    // An explicit from name wins; the deprecated `name` is the fallback for a bare address.
    const fromName = (typeof body.from === 'object' ? body.from.name : undefined) || body.name || (body.from ? undefined : template?.fromName) || null;
    return {
      templateId: template?.id ?? null,
      type: template?.type ?? 'TRANSACTIONAL',
      subject: subject!,
      body: html!,
      from: { address: fromAddress!.toLowerCase(), name: fromName },
      replyTo: body.reply ?? template?.replyTo ?? null,
      senderDomain: domain.domain,
    };
  }

  function decodeAttachments(body: SendBody): EmailAttachment[] {
    const items = body.attachments ?? [];
    const total = items.reduce((sum, a) => sum + (decodedBase64Size(a.content) ?? 0), 0);
    const tooLarge = attachmentsLimitProblem(total, config.attachmentsMaxBytes);
    if (tooLarge) throw validationFailed([{ field: 'attachments', message: tooLarge, code: 'too_big' }]);
    return items.map((a) => ({
      filename: a.filename,
      contentType: a.contentType ?? null,
      contentId: a.contentId ?? null,
      disposition: a.disposition ?? (a.contentId ? 'inline' : 'attachment'),
      content: Buffer.from(a.content.replace(/[\r\n]/g, ''), 'base64'),
    }));
  }

  const send = async (ctx: AppContext) => {
    const body = parseBody(sendBody, ctx.request.body);
    const project = ctx.state.project!;
    const plan = await planOf(ctx, body);
    const attachments = decodeAttachments(body);
    const recipients: Recipient[] = (Array.isArray(body.to) ? body.to : [body.to]).map((r) =>
      typeof r === 'string' ? { email: r, name: null } : { email: r.email, name: r.name || null },
    );

    let sent;
    try {
      sent = await sendTransactional(deps, ctx.state.em, {
        projectId: project.id,
        content: { subject: plan.subject, body: plan.body, type: plan.type },
        templateId: plan.templateId,
        sender: { fromAddress: plan.from.address, fromName: plan.from.name, replyTo: plan.replyTo, domain: plan.senderDomain },
        recipients,
        data: body.data,
        subscribed: body.subscribed,
        headers: body.headers,
        attachments,
      });
    } catch (err) {
      if (err instanceof WorkflowStartError)
        throw workflowStartApiError(err, 'The email could not be queued for delivery; nothing was sent. Try again shortly.');
      throw err;
    }
    ctx.body = {
      success: true,
      data: {
        emails: sent.map((e) => ({ contact: e.contact, email: e.emailId })),
        timestamp: new Date().toISOString(),
      },
    };
  };

  router.post('/v1/send', ...keyAuthenticated('secret', deps), idempotency(config.idempotencyKeyTtlHours), send);
  return router;
}
