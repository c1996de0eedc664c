import type { EntityManager } from '@mikro-orm/postgresql';
import { contactFields } from '../../db/contacts/contactFields';

/**
 * Where a custom contact field is referenced. Segments, campaigns and workflows do not exist in
 * Mailroom yet, so nothing can reference a field and those lists are truthfully empty; each of
 * those capabilities adds its lookup here when it lands.
 */
export async function contactUsage(em: EntityManager, projectId: string, path: string[]) {
  const contactCount = await contactFields.countWith(em, projectId, path);
  const segments: Array<{ id: string; name: string }> = [];
  const campaigns: Array<{ id: string; name: string }> = [];
  const workflows: Array<{ id: string; name: string }> = [];
  return { field: `data.${path.join('.')}`, segments, campaigns, workflows, contactCount, canDelete: !segments.length && !campaigns.length && !workflows.length };
}
