import type { ContactRow } from '../../db/contacts/contactRepository';

/**
 * The public shape of a contact: what the API answers and what a WEBHOOK step sends as `contact`,
 * one shape for both so a receiver sees what the API shows.
 */
export function serializeContact(contact: ContactRow) {
  return {
    id: contact.id,
    email: contact.email,
    subscribed: contact.subscribed,
    data: contact.data,
    createdAt: contact.createdAt,
    updatedAt: contact.updatedAt,
  };
}
