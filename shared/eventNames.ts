/**
 * The names of the events Mailroom records itself (contract section 6), in one list for every
 * layer that names them: the workflow field catalogue offers them as triggers before a project
 * has seen one, the activity feed lists them (its SQL in db/analytics), POST /v1/track refuses
 * them, and the dashboard puts them in words. In shared/ because the dashboard cannot import db/.
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

/**
 * What an outbound webhook endpoint's test sends (contract 18). It is no event of the project:
 * nothing records it, so it is not in SYSTEM_EVENT_NAMES (no trigger, no feed item).
 */
export const WEBHOOK_TEST_EVENT_NAME = 'webhook.test';

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
