import { z } from './zod';
import { MESSAGE_CONTENT_LIMITS, messageContentFields, offsetListQuery, offsetPage } from './messageContentFields';
import { id, timestamp } from './responseFields';
import { contactData } from './contactSchemas';
import { enumOf, text, uuid } from '../../shared/zodFields';
import { TEMPLATE_SORTS, TEMPLATE_TYPES } from '../../db/templates/templateRepository';

export const templateFields = messageContentFields(TEMPLATE_TYPES);

export const createTemplateBody = z.object({ ...templateFields, type: templateFields.type.default('MARKETING') });

export const patchTemplateBody = z.object({
  name: templateFields.name.optional(),
  description: templateFields.description,
  subject: templateFields.subject.optional(),
  body: templateFields.body.optional(),
  from: templateFields.from.optional(),
  fromName: templateFields.fromName,
  replyTo: templateFields.replyTo,
  type: templateFields.type.optional(),
});

export const templateListQuery = z.object({
  ...offsetListQuery(TEMPLATE_SORTS),
  type: z.enum(TEMPLATE_TYPES, { errorMap: () => ({ message: `type must be one of ${TEMPLATE_TYPES.join(', ')}` }) }).optional(),
});

/**
 * POST /templates/preview: a subject and body (saved or not) rendered for one contact as sending
 * would, without tracking. Empty text is allowed: an editor previews as the user types.
 */
export const templatePreviewBody = z
  .object({
    subject: text('subject').max(MESSAGE_CONTENT_LIMITS.subject, `subject must be at most ${MESSAGE_CONTENT_LIMITS.subject} characters`),
    body: text('body').max(MESSAGE_CONTENT_LIMITS.body, `body must be at most ${MESSAGE_CONTENT_LIMITS.body} characters`),
    type: enumOf('type', TEMPLATE_TYPES).default('MARKETING').describe('MARKETING mail gets the unsubscribe footer, as when sent'),
    contactId: uuid('contactId').optional().describe('The contact whose data fills the template'),
    data: contactData.optional().describe('Data over the contact’s, as `/v1/send`’s `data`'),
  })
  .strict();

/** POST /templates/:id/test: one copy to one address. */
export const templateTestBody = z
  .object({
    email: text('email')
      .trim()
      .max(254, 'email must be at most 254 characters')
      .email('email must be an email address')
      .transform((s) => s.toLowerCase()),
    data: contactData.optional().describe('Data over the contact’s (if the address is one), as `/v1/send`’s `data`'),
  })
  .strict();

// Responses.

export const templateResponse = z
  .object({
    id,
    name: z.string(),
    description: z.string().nullable(),
    subject: z.string().describe('Handlebars; rendered per recipient'),
    body: z.string().describe('Handlebars over HTML or MJML; rendered per recipient'),
    from: z.string(),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    type: z.enum(TEMPLATE_TYPES),
    projectId: id,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .strict()
  .openapi('Template');

export const templateListResponse = offsetPage(templateResponse);

/** POST /templates/:id/duplicate: the copy's id. */
export const templateDuplicateResponse = z.object({ id }).strict();

/** GET /templates/:id/usage: the workflow SEND_EMAIL steps using it (campaigns carry their own content, so none does). */
export const templateUsageResponse = z
  .object({
    campaigns: z.array(z.object({ id, name: z.string() }).strict()),
    workflowSteps: z.array(z.object({ id, name: z.string(), workflowId: id, workflowName: z.string(), enabled: z.boolean() }).strict()),
  })
  .strict();

/** POST /templates/preview: the mail as the contact would get it, minus the open pixel and click redirects. */
export const templatePreviewResponse = z
  .object({
    subject: z.string().describe('The rendered subject'),
    html: z.string().describe('The rendered HTML (footer included), without the open pixel; links point at their targets'),
    text: z.string().describe('The text part, as sent'),
    variables: z.array(z.string()).describe('The variables the subject and body read, as dotted paths, sorted'),
  })
  .strict()
  .openapi('TemplatePreview');

/** POST /templates/:id/test. */
export const templateTestResponse = z
  .object({
    success: z.literal(true),
    data: z
      .object({
        email: id.describe('The test email’s id (GET /emails/{id})'),
        to: z.string(),
        subject: z.string().describe('As rendered, `[TEST] ` first'),
      })
      .strict(),
    message: z.string(),
  })
  .strict();
