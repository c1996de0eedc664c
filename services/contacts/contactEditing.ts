import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventTriggers } from '../events/eventTriggers';
import { contactRepository, type ContactRow, type RecordedEvent, type UpsertResult } from '../../db/contacts/contactRepository';
import { emailFeedbackRepository, type PageContact } from '../../db/emails/emailFeedbackRepository';
import { conflict } from '../../lib/errors';
import { splitDataChanges } from './contactDataRules';

/** A contact's fields as POST /contacts and PATCH /contacts/:id give them (already validated). */
export interface ContactEdit {
  email?: string;
  subscribed?: boolean;
  data?: Record<string, unknown>;
}

export interface ContactEditingServices {
  eventTriggers: EventTriggers;
}

/** Hands a committed contact write's events, then the write itself, to the process's listeners. */
async function handOver({ eventTriggers }: ContactEditingServices, projectId: string, result: UpsertResult): Promise<void> {
  await eventTriggers.afterEventsRecorded(projectId, result.events);
  await eventTriggers.afterContactsChanged(projectId, [result.contact.id]);
}

/**
 * POST /contacts: upserts by email under the data rules. A new contact is subscribed unless
 * `subscribed` says otherwise; an existing one changes only when it says.
 */
export async function upsertContact(
  services: ContactEditingServices,
  em: EntityManager,
  projectId: string,
  edit: ContactEdit & { email: string },
): Promise<UpsertResult> {
  const [result] = await contactRepository.upsertByEmail(em, projectId, [
    { email: edit.email, subscribedIfNew: edit.subscribed ?? true, subscribedIfExisting: edit.subscribed, data: splitDataChanges(edit.data) },
  ]);
  await handOver(services, projectId, result);
  return result;
}

/**
 * PATCH /contacts/:id: a new email address (409 when another contact has it), the subscription
 * and the data, in one transaction.
 */
export async function updateContact(
  services: ContactEditingServices,
  em: EntityManager,
  projectId: string,
  current: ContactRow,
  edit: ContactEdit,
): Promise<UpsertResult> {
  const result = await em.transactional(async (tx) => {
    if (edit.email && edit.email !== current.email) {
      const taken = await contactRepository.findByEmail(tx, projectId, edit.email);
      if (taken) throw conflict(`Another contact already uses ${edit.email}`, { email: edit.email, contactId: taken.id });
      try {
        await contactRepository.changeEmail(tx, projectId, current.id, edit.email);
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw conflict(`Another contact already uses ${edit.email}`, { email: edit.email });
        throw err;
      }
    }
    const [upserted] = await contactRepository.upsertByEmail(tx, projectId, [
      { email: edit.email ?? current.email, subscribedIfNew: current.subscribed, subscribedIfExisting: edit.subscribed, data: splitDataChanges(edit.data) },
    ]);
    return upserted;
  });
  await handOver(services, projectId, result);
  return result;
}

/**
 * The unsubscribe and subscribe pages' POST: the contact a signed link names, subscribed or
 * unsubscribed (recording the event of a flip); null when it was deleted meanwhile.
 */
export async function setPageSubscription(
  services: ContactEditingServices,
  em: EntityManager,
  contactId: string,
  subscribed: boolean,
): Promise<{ contact: PageContact; events: RecordedEvent[] } | null> {
  const result = await emailFeedbackRepository.setPageSubscription(em, contactId, subscribed);
  if (result) await services.eventTriggers.afterEventsRecorded(result.contact.projectId, result.events);
  return result;
}
