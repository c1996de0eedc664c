import type { EntityManager } from '@mikro-orm/postgresql';
import type { RecordedEvent } from '../../db/contacts/contactRepository';
import { emailRepository, type EmailAttachment, type NewEmail } from '../../db/emails/emailRepository';
import { capRefusal } from '../billing/usageCaps';
import type { EventTriggers } from '../events/eventTriggers';
import { splitDataChanges } from '../contacts/contactDataRules';
import type { ContactWriteBatcher } from '../contacts/contactWriteBatcher';
import type { CapUsageLookup } from '../billing/capUsageLookup';
import type { AlsoInTransaction, DeliveryScheduler } from './deliveryScheduler';
import { composeEmail, type ComposerConfig, type EmailContent } from './emailComposer';
import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';

/** What the one send service needs: the same objects /v1/send and the SMTP relay are given by api/server.ts. */
export interface TransactionalSendDeps {
  config: ComposerConfig & { attachmentsMaxBytes: number };
  capUsage: CapUsageLookup;
  contactWrites: ContactWriteBatcher;
  eventTriggers: EventTriggers;
  deliveries: DeliveryScheduler;
}

/** One send as its front door (POST /v1/send, the SMTP relay) understood it, already validated. */
export interface TransactionalSendRequest {
  projectId: string;
  /** A template (rendered per recipient) or a finished message (the relay's parts, sent as written). */
  content: EmailContent;
  templateId: string | null;
  sender: { fromAddress: string; fromName: string | null; replyTo: string | null; domain: string };
  recipients: Array<{ email: string; name: string | null }>;
  /** The request's `data` (contact data rules, template variables); {} when none. */
  data?: Record<string, unknown>;
  /** `subscribed` of /v1/send: what a new contact gets (false when absent) and an existing one is set to when given. */
  subscribed?: boolean;
  /**
   * Header fields of every recipient's copy, over the rendered ones. Besides custom headers, a
   * relayed message keeps its `To` and `Cc` as written here (mail/delivery/emailSender.ts shows
   * them while the envelope names only the email's recipient).
   */
  headers?: Record<string, string>;
  attachments: EmailAttachment[];
  /** The emails' ids, one per recipient in order, when the caller must know them before sending (the relay keeps them with the Message-ID); new ones otherwise. */
  emailIds?: string[];
  /**
   * Written in the transaction that records the emails, so it commits with them or not at all:
   * the front door's idempotency outcome (a kill after the commit leaves it settled, not in flight).
   * Not run when the send is refused at its cap.
   */
  alsoInTransaction?: AlsoInTransaction;
}

export interface SentEmail {
  contact: { id: string; email: string };
  emailId: string;
}

/** Contract 9's limit on one send's attachments, decoded; null when within it. */
export function attachmentsLimitProblem(totalBytes: number, maxBytes: number): string | null {
  return totalBytes > maxBytes ? `Attachments may total at most ${maxBytes} bytes once decoded (these are ${totalBytes})` : null;
}

/**
 * The one way a transactional send becomes emails (contract 9), for POST /v1/send and the SMTP
 * relay alike: the transactional cap checked before any contact is written, each recipient's
 * contact upserted under the data rules (new contacts unsubscribed unless told otherwise), the
 * attachments stored once, each email composed (services/sending/emailComposer.ts: rendering,
 * tracking, the suppression and recipient rules) and recorded (deliveryScheduler.ts). Resolves once
 * the emails are committed, with the emails in recipient order; their delivery starts afterwards,
 * by the scheduler or, when Temporal is away, by the delivery sweep (contract 9).
 *
 * Throws BillingLimitExceeded at the cap, TemplateRenderError when a template does not render, and
 * the database's errors (nothing was recorded then); each front door answers them in its own terms.
 */
export async function sendTransactional(deps: TransactionalSendDeps, em: EntityManager, request: TransactionalSendRequest): Promise<SentEmail[]> {
  const { projectId, recipients, content } = request;
  const data = request.data ?? {};

  // A send the transactional cap clearly cannot take is refused before any contact is written.
  // MARKETING mail to unsubscribed contacts is not counted, which only the contacts tell, so
  // that type is left to the reservation that records the emails (deliveryScheduler).
  if (content.type !== 'MARKETING') {
    const caps = await deps.capUsage.current(projectId, 'transactional');
    if (capRefusal('transactional', caps, recipients.length)) {
      // Only at the cap's edge does it matter which recipients are suppressed (they count nowhere).
      const suppressed = await emailRepository.suppressedAddresses(
        em,
        projectId,
        recipients.map((r) => r.email),
      );
      const counted = recipients.filter((r) => !suppressed.has(r.email)).length;
      const refusal = capRefusal('transactional', caps, counted);
      if (refusal) throw refusal;
    }
  }

  // Contacts first, each under the data rules; new contacts are unsubscribed unless told
  // otherwise, and an explicit value changes an existing contact (with its event).
  const changes = splitDataChanges(request.data);
  const upserts = await Promise.all(
    recipients.map((r) =>
      deps.contactWrites.write(
        projectId,
        { email: r.email, subscribedIfNew: request.subscribed ?? false, subscribedIfExisting: request.subscribed, data: changes, reportSuppression: true },
        'send',
      ),
    ),
  );
  const flips: RecordedEvent[] = upserts.flatMap((u) => u.events);
  await deps.eventTriggers.afterEventsRecorded(projectId, flips);
  await deps.eventTriggers.afterContactsChanged(
    projectId,
    upserts.map((u) => u.contact.id),
  );

  const attachmentSetId = request.attachments.length ? await emailRepository.insertAttachmentSet(em, projectId, request.attachments) : null;

  const emails: NewEmail[] = upserts.map(
    ({ contact, suppressed }, index) =>
      composeEmail(deps.config, {
        id: request.emailIds?.[index] ?? newTimeOrderedId(),
        projectId,
        source: 'TRANSACTIONAL',
        content,
        sender: request.sender,
        recipient: {
          toAddress: contact.email,
          toName: recipients[index].name,
          contactId: contact.id,
          suppressed: suppressed === true,
          subscribed: contact.subscribed,
        },
        personalisation: { contact, requestData: data, linkContactId: contact.id },
        owners: { templateId: request.templateId },
        // The caller's headers win over the List-Unsubscribe pair the renderer adds.
        headers: request.headers,
        attachmentSetId,
      }).email,
  );

  await deps.deliveries.record(projectId, emails, request.alsoInTransaction);
  return emails.map((e, index) => ({ contact: { id: upserts[index].contact.id, email: upserts[index].contact.email }, emailId: e.id }));
}
