import type { EntityManager } from '@mikro-orm/postgresql';
import { contactFields } from '../../db/contacts/contactFields';
import { segmentRepository } from '../../db/segments/segmentRepository';
import { automationRepository } from '../../db/automations/automationRepository';

/**
 * Where a custom contact field is referenced: segments and FILTERED campaign audiences whose
 * conditions name the field or a path under it (`data.address` is used by `data.address.city`),
 * and workflows whose CONDITION steps read it.
 */
export async function contactUsage(em: EntityManager, projectId: string, path: string[]) {
  const field = `data.${path.join('.')}`;
  const contactCount = await contactFields.countWith(em, projectId, path);
  const { segments, campaigns } = await segmentRepository.usingField(em, projectId, field);
  const workflows = await automationRepository.usingContactField(em, projectId, path);
  return { field, segments, campaigns, workflows, contactCount, canDelete: !segments.length && !campaigns.length && !workflows.length };
}
