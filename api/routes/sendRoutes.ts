import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { parseBody } from '../http/validation';
import { notFound, validationFailed, type FieldError } from '../../lib/errors';
import { keyAuthenticated } from '../auth/apiKey';
import { idempotency } from '../middleware/idempotency';
import { decodedBase64Size, MAX_ATTACHMENTS, MAX_RECIPIENTS_PER_SEND, sendBody, sendResponse, type SendBody } from '../schemas/sendSchemas';
import { describedRoutes } from '../openapi/describedRouter';
import type { EmailAttachment } from '../../db/emails/emailRepository';
import { attachmentsLimitProblem, sendTransactional } from '../../services/sending/transactionalSend';
import { templateRepository } from '../../db/templates/templateRepository';
import { unverifiedSenderDomain } from '../../services/domains/senderDomainLookup';
import { checkTemplate, type TemplateType } from '../../mail/rendering/renderEmail';

/** The `from` address a send body names (a string or `{ email }`), before validation; undefined when it names none. */
function senderAddressInBody(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || !('from' in body)) return undefined;
  const from = body.from;
  return typeof from === 'object' && from !== null && 'email' in from ? from.email : from;
}

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
 * is committed (contract 9), also while Temporal is away. Delivery starts right after, or by the
 * delivery sweep; it is asynchronous and retried.
 */
export function sendRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Sending', access: 'secret' });
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

    const domain = await deps.senderDomains.findVerified(projectId, fromAddress!, ctx.state.checkedSender);
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

    const sent = await sendTransactional(deps, ctx.state.em, {
      projectId: project.id,
      content: { subject: plan.subject, body: plan.body, type: plan.type },
      templateId: plan.templateId,
      sender: { fromAddress: plan.from.address, fromName: plan.from.name, replyTo: plan.replyTo, domain: plan.senderDomain },
      recipients,
      data: body.data,
      subscribed: body.subscribed,
      headers: body.headers,
      attachments,
      // The key's 200 commits with the emails.
      alsoInTransaction: ctx.state.idempotency?.outcomeIn(200),
    });
    ctx.body = {
      success: true,
      data: {
        emails: sent.map((e) => ({ contact: e.contact, email: e.emailId })),
        timestamp: new Date().toISOString(),
      },
    } satisfies z.input<typeof sendResponse>;
  };

  route.post(
    '/v1/send',
    {
      summary: 'Send a transactional email',
      description:
        `One email per recipient (at most ${MAX_RECIPIENTS_PER_SEND} in \`to\`), each personalised with its contact's data. ` +
        'Give `subject` and `body`, or a `template` whose fields the request may override; `from` must be an address of a verified sender domain ' +
        '(403 otherwise) unless the template gives one. ' +
        'Each recipient becomes a contact (a new one is unsubscribed unless `subscribed` is true) and `data` is merged into it. ' +
        `Up to ${MAX_ATTACHMENTS} base64 \`attachments\`. ` +
        'The answer comes once every email is durably recorded, also while Temporal is away; its delivery starts right after ' +
        '(or within about 30 seconds of a crash, or of Temporal coming back, by the delivery sweep) and is asynchronous and retried ' +
        '(follow it with GET /emails/{id}). A suppressed address still gets an email record, which is not delivered. ' +
        'With an `Idempotency-Key` header, another request with the same key is refused (409) and sends nothing; a request refused with a 4xx releases its key.',
      body: {
        schema: sendBody,
        example: {
          to: [{ name: 'Ada Lovelace', email: 'ada@example.com' }, 'grace@example.com'],
          from: { name: 'Acme', email: 'hello@mail.acme.example' },
          subject: 'Welcome to Acme',
          body: '<p>Hi {{firstName}}, thanks for signing up for the {{plan}} plan.</p>',
          data: { firstName: 'Ada', plan: 'pro' },
        },
      },
      responses: {
        200: {
          description: 'The emails are recorded; their delivery follows',
          schema: sendResponse,
          example: {
            success: true,
            data: {
              emails: [
                {
                  contact: { id: '0b6f3c1e-5d2a-4f8e-9a41-7c3d2e1f0a9b', email: 'ada@example.com' },
                  email: '7f3a2b1c-9d8e-4f6a-b5c4-3e2d1f0a9b8c',
                },
                {
                  contact: { id: 'c4d5e6f7-0a1b-4c2d-8e3f-4a5b6c7d8e9f', email: 'grace@example.com' },
                  email: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
                },
              ],
              timestamp: '2026-11-20T16:40:31.088Z',
            },
          },
        },
      },
    },
    // The sender-domain rule's statement rides with the key's (one statement fewer a send).
    ...keyAuthenticated('secret', deps, { senderAddressOf: (ctx) => senderAddressInBody(ctx.request.body) }),
    idempotency(config.idempotencyKeyTtlHours),
    send,
  );
  return router;
}
