import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed } from '../../lib/errors';
import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';
import { contactRepository } from '../../db/contacts/contactRepository';
import { emailRepository } from '../../db/emails/emailRepository';
import type { EmailSource } from '../../db/emails/emailKinds';
import type { TemplateType } from '../../mail/rendering/renderEmail';
import { composeEmail, type ComposerConfig } from './emailComposer';
import type { DeliveryScheduler } from './deliveryScheduler';
import { unverifiedSenderDomain, type SenderDomainLookup } from '../domains/senderDomainLookup';

/** What a test send needs: the composer's settings, the sender-domain rule and the one delivery path. */
export interface TestCopySendDeps {
  config: ComposerConfig;
  senderDomains: SenderDomainLookup;
  deliveries: DeliveryScheduler;
}

/** A campaign's or template's content and sender, as a test copy sends them. */
export interface TestCopyContent {
  projectId: string;
  source: EmailSource;
  subject: string;
  body: string;
  type: TemplateType;
  from: string;
  fromName: string | null;
  replyTo: string | null;
}

export interface TestCopySent {
  emailId: string;
  to: string;
  /** The subject as rendered for this address, `[TEST] ` first. */
  subject: string;
}

/**
 * One rendered copy of a campaign or template to one address through the one send path (recorded,
 * then delivered by a delivery workflow), subject `[TEST] …`. It carries no campaign, template or
 * contact id, so it counts in no statistics and no contact's history, and no contact is created.
 * An address that is a contact is rendered with that contact's data (and `data` over it); any
 * other address with `data` alone, its links naming no contact. Tracking applies as in any sent
 * email.
 *
 * Refuses an unverified sender domain (403) and a suppressed address (422). Throws
 * TemplateRenderError when the content cannot render for this data and WorkflowStartError when
 * delivery could not be scheduled (nothing is sent then).
 */
export async function sendTestCopy(
  deps: TestCopySendDeps,
  em: EntityManager,
  content: TestCopyContent,
  address: string,
  data: Record<string, unknown> = {},
): Promise<TestCopySent> {
  const { projectId } = content;
  const sender = await deps.senderDomains.findVerified(projectId, content.from);
  if (!sender) throw unverifiedSenderDomain(content.from);
  const suppressed = await emailRepository.suppressedAddresses(em, projectId, [address]);
  if (suppressed.size) {
    throw validationFailed([{ field: 'email', message: `${address} is suppressed after a hard bounce or a complaint; no mail is sent to it`, code: 'custom' }]);
  }

  const contact = await contactRepository.findByEmail(em, projectId, address);
  const emailId = newTimeOrderedId();
  const { email, rendered } = composeEmail(deps.config, {
    id: emailId,
    projectId,
    source: content.source,
    content: { subject: `[TEST] ${content.subject}`, body: content.body, type: content.type },
    sender: { fromAddress: content.from, fromName: content.fromName, replyTo: content.replyTo, domain: sender.domain },
    // No contact: the test counts in no contact's history. Only suppression (refused above) stops it.
    recipient: { toAddress: address, toName: null, contactId: null, suppressed: false, subscribed: true },
    personalisation: {
      contact: contact ?? { id: '', email: address, data: {} },
      requestData: data,
      linkContactId: contact?.id ?? crypto.randomUUID(),
    },
    // No campaign or template id: the test counts in none of their statistics.
    owners: { templateId: null, campaignId: null },
  });
  await deps.deliveries.record(projectId, [email]);
  return { emailId, to: address, subject: rendered.subject };
}
