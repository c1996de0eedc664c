import type { EntityManager } from '@mikro-orm/postgresql';
import { contactFields } from '../../db/contacts/contactFields';
import { segmentRepository } from '../../db/segments/segmentRepository';

/**
 * Where a custom contact field is referenced: segments and FILTERED campaign audiences whose
 * conditions name the field or a path under it (`data.address` is used by `data.address.city`).
 * Workflows do not exist in Mailroom yet, so that list is truthfully empty; they add their
 * lookup here when they land.
 */
export async function contactUsage(em: EntityManager, projectId: string, path: string[]) {
  const field = `data.${path.join('.')}`;
  const contactCount = await contactFields.countWith(em, projectId, path);
  const { segments, campaigns } = await segmentRepository.usingField(em, projectId, field);
  const workflows: Array<{ id: string; name: string }> = [];
  return { field, segments, campaigns, workflows, contactCount, canDelete: !segments.length && !campaigns.length && !workflows.length };
}
