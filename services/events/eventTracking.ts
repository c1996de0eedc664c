import type { EventTriggers } from './eventTriggers';
import type { ContactWriteBatcher } from '../contacts/contactWriteBatcher';
import type { ContactRow, RecordedEvent } from '../../db/contacts/contactRepository';
import { splitDataChanges } from '../contacts/contactDataRules';

export interface EventTrackingDeps {
  contactWrites: ContactWriteBatcher;
  eventTriggers: EventTriggers;
}

/** A tracked event as POST /v1/track's body gives it (already validated). */
export interface TrackedEventRequest {
  email: string;
  event: string;
  data?: Record<string, unknown>;
  subscribed?: boolean;
  preserveExistingSubscription?: boolean;
}

/**
 * POST /v1/track and POST /events/track: upserts the contact by email under the data rules and
 * records the event, in one statement shared with the other tracks in flight
 * (ContactWriteBatcher); then hands the committed events to the triggers.
 */
export async function trackEvent(
  deps: EventTrackingDeps,
  projectId: string,
  request: TrackedEventRequest,
): Promise<{ contact: ContactRow; event: RecordedEvent }> {
  const changes = splitDataChanges(request.data);
  // New contacts are subscribed unless told otherwise; an explicit value changes an existing
  // contact, unless preserveExistingSubscription asks to apply it to new contacts only.
  const result = await deps.contactWrites.write(
    projectId,
    {
      email: request.email,
      subscribedIfNew: request.subscribed ?? true,
      subscribedIfExisting: request.preserveExistingSubscription ? undefined : request.subscribed,
      data: changes,
      event: { name: request.event, data: request.data ? { ...changes.set, ...changes.oneShot } : null },
    },
    'track',
  );
  await deps.eventTriggers.afterEventsRecorded(projectId, result.events);
  return { contact: result.contact, event: result.events.find((e) => e.id === result.trackedEventId)! };
}
