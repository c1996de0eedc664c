import type { z } from 'zod';
import type { TemplateRow } from '../../db/templates/templateRepository';
import type { templateResponse } from '../schemas/templateSchemas';

/** The API shape of a template (specification, "Template"). */
export function serializeTemplate(template: TemplateRow): z.input<typeof templateResponse> {
  return {
    id: template.id,
    name: template.name,
    description: template.description,
    subject: template.subject,
    body: template.body,
    from: template.from,
    fromName: template.fromName,
    replyTo: template.replyTo,
    type: template.type,
    projectId: template.projectId,
    createdAt: template.createdAt,
    updatedAt: template.updatedAt,
  };
}
