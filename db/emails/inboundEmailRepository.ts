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

/** A copy to record, with the data of its `email.received` event (null: none is due, or the sender is no contact). */
export interface InboundEmailToRecord {
  copy: InboundEmailCopy;
  eventData: Record<string, unknown> | null;
}

/**
 * The INBOUND email records (source INBOUND, status RECEIVED) of received copies and their
 * `email.received` events: one statement for the records and one for the events, with bound
 * parameters (db/sql/boundStatement.ts; an event carries up to 128 KB of text, which em.execute
 * would quote into the statement character by character). At most one record per (message,
 * project, recipient): `alreadyRecorded` finds those a retried activity wrote before, and a copy
 * recorded meanwhile by another transaction is skipped by the unique key. Call them in the
 * transaction that also counts the copies.
 */
export const inboundEmailRepository = {
  /** Which of these (message, recipient) copies of the project are recorded: keys `${inboundMessageId} ${toAddress.toLowerCase()}`. */
  async alreadyRecorded(em: EntityManager, projectId: string, copies: Array<{ inboundMessageId: string; toAddress: string }>): Promise<Set<string>> {
    if (!copies.length) return new Set();
    const rows = await executeBound<{ inbound_message_id: string; to_address: string }>(
      em,
      `select inbound_message_id, to_address from emails where project_id = ? and inbound_message_id = any(?::uuid[])`,
      [projectId, `{${[...new Set(copies.map((c) => c.inboundMessageId))].join(',')}}`],
    );
    // Keyed in JavaScript on both sides, so the caller's key and this one fold letter case alike.
    return new Set(rows.map((r) => `${r.inbound_message_id} ${r.to_address.toLowerCase()}`));
  },

  /** Records the copies not recorded yet and the events of those it recorded; answers how many it recorded and their events. */
  async recordMany(em: EntityManager, items: InboundEmailToRecord[]): Promise<{ created: number; events: RecordedEvent[] }> {
    if (!items.length) return { created: 0, events: [] };
    const values = items.map(() => `(?::uuid, ?::uuid, ?::uuid, 'INBOUND', 'TRANSACTIONAL', ?, ?, ?, ?, 'RECEIVED', ?, ?::uuid, ?::jsonb, ?)`).join(', ');
    const params = items.flatMap(({ copy }) => [
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
    ]);
    const inserted = await executeBound<{ id: string }>(
      em,
      `insert into emails (id, project_id, contact_id, source, type, subject, from_address, from_name, to_address, status, message_id, inbound_message_id, auth, error)
       values ${values}
       on conflict (inbound_message_id, project_id, lower(to_address)) where inbound_message_id is not null do nothing
       returning id`,
      params,
    );
    const created = new Set(inserted.map((r) => r.id));
    const withEvents = items.filter(({ copy, eventData }) => created.has(copy.id) && eventData && copy.contactId);
    if (!withEvents.length) return { created: created.size, events: [] };
    const rows = await executeBound<{ id: string; contact_id: string; name: string; created_at: Date | string }>(
      em,
      `insert into events (project_id, contact_id, name, source, email_id, data)
       values ${withEvents.map(() => `(?::uuid, ?::uuid, 'email.received', 'SYSTEM', ?::uuid, ?::jsonb)`).join(', ')}
       returning id, contact_id, name, created_at`,
      withEvents.flatMap(({ copy, eventData }) => [copy.projectId, copy.contactId, copy.id, JSON.stringify(eventData)]),
    );
    return {
      created: created.size,
      events: rows.map((event) => ({ id: event.id, name: event.name, contactId: event.contact_id, createdAt: new Date(event.created_at) })),
    };
  },
};
