import { z } from 'zod';
import { messageContentFields, offsetListQuery } from './messageContentFields';
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
