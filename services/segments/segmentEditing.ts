import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventTriggers } from '../events/eventTriggers';
import type { ConditionTree } from '../../db/conditions';
import { segmentRepository, type SegmentRow } from '../../db/segments/segmentRepository';
import { contactRepository } from '../../db/contacts/contactRepository';

export interface SegmentEditingServices {
  eventTriggers: EventTriggers;
}

/**
 * PATCH /segments/:id, in one transaction (segmentRepository.update: a tracked segment's changed
 * condition moves its members with entry and exit events); the events go to the triggers after.
 */
export async function updateSegment(
  services: SegmentEditingServices,
  em: EntityManager,
  current: SegmentRow,
  changes: { name?: string; description?: string | null; condition?: ConditionTree; trackMembership?: boolean },
): Promise<SegmentRow> {
  const { segment, events } = await em.transactional((tx) => segmentRepository.update(tx, current, changes));
  await services.eventTriggers.afterEventsRecorded(segment.projectId, events);
  return segment;
}

/**
 * Adds contacts to a STATIC segment by address. With `createMissing`, addresses that are no contact
 * yet become contacts first (only those: existing ones keep their data and updatedAt); the others
 * are answered in `notFound`. The membership events, then the contacts created, go to the listeners.
 */
export async function addStaticMembers(
  services: SegmentEditingServices,
  em: EntityManager,
  segment: SegmentRow,
  request: { emails: string[]; createMissing?: boolean; subscribed?: boolean },
): Promise<{ added: number; created: number; notFound: string[] }> {
  const projectId = segment.projectId;
  const emails = [...new Set(request.emails)];
  let createdIds: string[] = [];
  if (request.createMissing) createdIds = await contactRepository.createMissing(em, projectId, emails, request.subscribed ?? true);
  const found = await contactRepository.idsByEmail(em, projectId, emails);
  const foundEmails = new Set(found.map((c) => c.email));
  const { added, events } = await segmentRepository.addMembers(
    em,
    segment,
    found.map((c) => c.id),
  );
  await services.eventTriggers.afterEventsRecorded(projectId, events);
  if (createdIds.length) await services.eventTriggers.afterContactsChanged(projectId, createdIds);
  return { added, created: createdIds.length, notFound: emails.filter((e) => !foundEmails.has(e)) };
}

/** Removes contacts from a STATIC segment by address; the exit events go to the triggers after. */
export async function removeStaticMembers(services: SegmentEditingServices, em: EntityManager, segment: SegmentRow, emails: string[]): Promise<number> {
  const { removed, events } = await segmentRepository.removeMembers(em, segment, [...new Set(emails)]);
  await services.eventTriggers.afterEventsRecorded(segment.projectId, events);
  return removed;
}
