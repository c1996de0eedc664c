import type { EntityManager } from '@mikro-orm/postgresql';
import type { RecordedEvent } from '../contacts/contactRepository';
import type { InboundAuthResults } from './emailRepository';
import { executeBound } from '../sql/boundStatement';

/** One project's copy of a received message (contract 20). */
export interface InboundEmailCopy {
  id: string;
  projectId: string;
  inboundMessageId: string;
  contactId: string | null;
  fromAddress: string;
  fromName: string | null;
  toAddress: string;
  subject: string;
  /** The Message-ID without angle brackets; empty when the message had none. */
  messageId: string;
  auth: InboundAuthResults;
  /** Why the copy has no `email.received` although one was due (the project's `inbound` cap); null otherwise. */
  error: string | null;
}

/**
 * Records one copy: the email (source INBOUND, status RECEIVED) and, when `eventData` is given
 * and the sender is a contact, its `email.received` event. At most one copy per (message,
 * project, recipient): when it exists already (a retried activity), nothing is written and
 * `created` is false. Call it in the transaction that also counts the copy.
 */
export const inboundEmailRepository = {
  async record(
    em: EntityManager,
    copy: InboundEmailCopy,
    eventData: ((emailId: string) => Record<string, unknown>) | null,
  ): Promise<{ created: boolean; events: RecordedEvent[] }> {
    // Bound parameters (db/sql/boundStatement.ts): the event carries up to 128 KB of text, which
    // em.execute would quote into the statement character by character.
    const inserted = await executeBound<{ id: string }>(
      em,
      `insert into emails (id, project_id, contact_id, source, type, subject, from_address, from_name, to_address, status, message_id, inbound_message_id, auth, error)
       values (?, ?, ?, 'INBOUND', 'TRANSACTIONAL', ?, ?, ?, ?, 'RECEIVED', ?, ?, ?::jsonb, ?)
       on conflict (inbound_message_id, project_id, lower(to_address)) where inbound_message_id is not null do nothing
       returning id`,
      [
        copy.id,
        copy.projectId,
        copy.contactId,
        copy.subject,
        copy.fromAddress,
        copy.fromName,
        copy.toAddress,
        copy.messageId,
        copy.inboundMessageId,
        JSON.stringify(copy.auth),
        copy.error,
      ],
    );
    if (!inserted.length) return { created: false, events: [] };
    if (!eventData || !copy.contactId) return { created: true, events: [] };
    const [event] = await executeBound<{ id: string; contact_id: string; name: string; created_at: Date | string }>(
      em,
      `insert into events (project_id, contact_id, name, source, email_id, data)
       values (?, ?, 'email.received', 'SYSTEM', ?, ?::jsonb)
       returning id, contact_id, name, created_at`,
      [copy.projectId, copy.contactId, copy.id, JSON.stringify(eventData(copy.id))],
    );
    return { created: true, events: [{ id: event.id, name: event.name, contactId: event.contact_id, createdAt: new Date(event.created_at) }] };
  },
};
