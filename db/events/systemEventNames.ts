/**
 * The names of the events Mailroom records itself (contract section 6), in one list for every
 * layer that names them: the workflow field catalogue offers them as triggers before a project
 * has seen one, the activity feed lists them, and POST /v1/track refuses them.
 *
 * This module sits in db/ because the lowest layer that needs the names is db/ (the activity feed's
 * SQL in db/analytics), and db/ may import only lib/, which knows nothing of Mailroom's domain.
 * services/ and api/ may both import db/, so every layer that names these events can read them here.
 */

export const SYSTEM_EVENT_NAMES = [
  'contact.subscribed',
  'contact.unsubscribed',
  'email.sent',
  'email.delivered',
  'email.opened',
  'email.clicked',
  'email.bounced',
  'email.complained',
  'email.failed',
  'email.received',
] as const;
export type SystemEventName = (typeof SYSTEM_EVENT_NAMES)[number];

/** What a tracked segment records when a contact joins it; the slug makes one name per segment. */
export const segmentEntryEventName = (slug: string) => `segment.${slug}.entry`;
/** What a tracked segment records when a contact leaves it. */
export const segmentExitEventName = (slug: string) => `segment.${slug}.exit`;

const SEGMENT_EVENT_NAME = /^segment\..+\.(entry|exit)$/;

/**
 * Whether a name is Mailroom's own, so a client may not record it (specification, POST /v1/track):
 * the names above, every `email.` name (the whole namespace, so a later email event cannot clash
 * with one a client already tracks), and the entry and exit events of any tracked segment.
 */
export function isReservedEventName(name: string): boolean {
  return name.startsWith('email.') || (SYSTEM_EVENT_NAMES as readonly string[]).includes(name) || SEGMENT_EVENT_NAME.test(name);
}
