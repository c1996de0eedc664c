import type { EventRow } from '../../db/events/eventRepository';

/** The API shape of an event (contract section 6); emailId only when there is one. */
export function serializeEvent(event: EventRow) {
  const { emailId, seq: _seq, ...rest } = event;
  return emailId ? { ...rest, emailId } : rest;
}
