import type { RecordedEvent } from '../../db/contacts/contactRepository';

export interface RecordedEventsBatch {
  projectId: string;
  events: RecordedEvent[];
}

export type EventsListener = (batch: RecordedEventsBatch) => Promise<void>;

/** Contacts whose own fields (data, email) were written, with or without an event. */
export interface ChangedContactsBatch {
  projectId: string;
  contactIds: string[];
}

export type ContactsListener = (batch: ChangedContactsBatch) => Promise<void>;

/**
 * The one place every recorded event passes through once it is committed, whoever recorded it
 * (POST /v1/track, a subscription flip in the API, an import or bulk activity). Automation
 * workflows and tracked segments subscribe here; a listener's failure is reported to `onError`
 * and never undoes the event.
 *
 * The rule: every path that records events (or writes contacts) hands them over here after its
 * commit, and does so in a service (services/<area>/), never in a route or an activity of its
 * own, so a route still calls one service and no path forgets the hand-over. Outbound webhooks do
 * not depend on it: their messages are written by a trigger on `events` in the event's own
 * statement (webhook_messages_for_events), so an event whose hand-over never ran still reaches them.
 */
export class EventTriggers {
  private readonly listeners: EventsListener[] = [];
  private readonly contactListeners: ContactsListener[] = [];

  constructor(private readonly onError: (err: unknown, batch: RecordedEventsBatch) => void) {}

  subscribe(listener: EventsListener): () => void {
    this.listeners.push(listener);
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  /** Listeners of contact writes that record no event (data changes): tracked segments. */
  subscribeContactChanges(listener: ContactsListener): () => void {
    this.contactListeners.push(listener);
    return () => {
      const index = this.contactListeners.indexOf(listener);
      if (index >= 0) this.contactListeners.splice(index, 1);
    };
  }

  async afterContactsChanged(projectId: string, contactIds: string[]): Promise<void> {
    if (!contactIds.length || !this.contactListeners.length) return;
    await Promise.all(
      this.contactListeners.map(async (listener) => {
        try {
          await listener({ projectId, contactIds });
        } catch (err) {
          this.onError(err, { projectId, events: [] });
        }
      }),
    );
  }

  async afterEventsRecorded(projectId: string, events: RecordedEvent[]): Promise<void> {
    if (!events.length || !this.listeners.length) return;
    const batch = { projectId, events };
    await Promise.all(
      this.listeners.map(async (listener) => {
        try {
          await listener(batch);
        } catch (err) {
          this.onError(err, batch);
        }
      }),
    );
  }
}

/** The process's event triggers; a listener that fails is logged with the event ids it was given. */
export function createEventTriggers(logger: { error: (obj: object, msg: string) => void }): EventTriggers {
  return new EventTriggers((err, batch) => logger.error({ err, projectId: batch.projectId, eventIds: batch.events.map((e) => e.id) }, 'event listener failed'));
}
