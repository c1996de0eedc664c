import { z } from './zod';
import { messageContentFields, offsetListQuery, offsetPage } from './messageContentFields';
import { id, timestamp } from './responseFields';
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
