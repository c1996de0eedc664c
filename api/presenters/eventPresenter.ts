import type { z } from 'zod';
import type { EventRow } from '../../db/events/eventRepository';
import type { eventResponse } from '../schemas/eventSchemas';

/** The API shape of an event (contract section 6); emailId only when there is one. */
export function serializeEvent(event: EventRow): z.input<typeof eventResponse> {
  const { emailId, seq: _seq, ...rest } = event;
  // Every writer of `events` stores an object or null (the row type leaves the jsonb column unknown).
  const shaped = { ...rest, data: rest.data as Record<string, unknown> | null };
  return emailId ? { ...shaped, emailId } : shaped;
}
