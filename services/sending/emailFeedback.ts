import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventTriggers } from '../events/eventTriggers';
import { emailFeedbackRepository, type BounceNotice, type ComplaintNotice, type FeedbackOutcome } from '../../db/emails/emailFeedbackRepository';

/**
 * What a relay's feedback about a sent email does, whichever way it arrived: an Amazon SES
 * notification through SNS (api/routes/snsWebhookRoutes.ts) or a report by mail, a DSN or an ARF
 * report (services/inbound/deliveryReports.ts). One home for the rule, so a bounce by mail and a
 * bounce by SES cannot drift apart (contract 9 and 20):
 *
 * - a permanent bounce → BOUNCED, suppressed (BOUNCE), the contact unsubscribed, `email.bounced`;
 * - a transient or undetermined one → its diagnostic noted in the email's `error`, nothing else:
 *   the relay gave up on this one message, the mailbox exists, and an `email.bounced` would make
 *   automations treat a full mailbox as a dead address;
 * - a complaint → COMPLAINED, suppressed (COMPLAINT), the contact unsubscribed, `email.complained`.
 *
 * The effects are idempotent (emailFeedbackRepository locks the email row and records each event
 * once), so replays and a report arriving both by mail and by SES change nothing twice. Committed
 * events go to the event triggers (automations, tracked segments) as every event does.
 *
 * Opens and clicks (the tracking links of api/routes/emailTrackingRoutes.ts) are the reader's
 * feedback: every hit counts, the first one records `email.opened` / `email.clicked`.
 */
export interface FeedbackServices {
  eventTriggers: EventTriggers;
}

/** `applied`; `ignored` with the reason (the notice names none of the email's recipients); `unknown-email` (deleted meanwhile). */
export type FeedbackResult = { result: 'applied'; outcome: FeedbackOutcome } | { result: 'ignored'; reason: string } | { result: 'unknown-email' };

/** Whether a bounce proves the address dead. SES says Permanent; a DSN's Status class 5 is classed Permanent by its reader. */
export const isPermanentBounce = (notice: BounceNotice): boolean => notice.bounceType === 'Permanent';

async function announce(services: FeedbackServices, outcome: (FeedbackOutcome & { ignored?: string }) | null): Promise<FeedbackResult> {
  if (!outcome) return { result: 'unknown-email' };
  if (typeof outcome.ignored === 'string') return { result: 'ignored', reason: outcome.ignored };
  if (outcome.events.length) await services.eventTriggers.afterEventsRecorded(outcome.projectId, outcome.events);
  return { result: 'applied', outcome };
}

export async function applyBounce(services: FeedbackServices, em: EntityManager, emailId: string, notice: BounceNotice): Promise<FeedbackResult> {
  return announce(services, await emailFeedbackRepository.recordBounce(em, emailId, notice, isPermanentBounce(notice)));
}

export async function applyComplaint(services: FeedbackServices, em: EntityManager, emailId: string, notice: ComplaintNotice): Promise<FeedbackResult> {
  return announce(services, await emailFeedbackRepository.recordComplaint(em, emailId, notice));
}

export async function applyDelivery(services: FeedbackServices, em: EntityManager, emailId: string): Promise<FeedbackResult> {
  return announce(services, await emailFeedbackRepository.recordDelivery(em, emailId));
}

export async function applyOpen(services: FeedbackServices, em: EntityManager, emailId: string): Promise<FeedbackResult> {
  return announce(services, await emailFeedbackRepository.recordOpen(em, emailId));
}

export async function applyClick(services: FeedbackServices, em: EntityManager, emailId: string, url: string): Promise<FeedbackResult> {
  return announce(services, await emailFeedbackRepository.recordClick(em, emailId, url));
}
