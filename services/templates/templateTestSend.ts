import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed } from '../../lib/errors';
import type { TemplateRow } from '../../db/templates/templateRepository';
import { contactRepository } from '../../db/contacts/contactRepository';
import { emailRepository } from '../../db/emails/emailRepository';
import { composeEmail, type ComposerConfig } from '../sending/emailComposer';
import type { DeliveryScheduler } from '../sending/deliveryScheduler';
import { unverifiedSenderDomain, type SenderDomainLookup } from '../domains/senderDomainLookup';

export interface TemplateTestSendDeps {
  config: ComposerConfig;
  senderDomains: SenderDomainLookup;
  deliveries: DeliveryScheduler;
}

export interface TemplateTestSent {
  emailId: string;
  to: string;
  /** The subject as rendered for this address, `[TEST] ` first. */
  subject: string;
}

/**
 * POST /templates/:id/test: one rendered copy of a template to one address through the one send
 * path (recorded, then delivered by a delivery workflow), subject `[TEST] …`, as a campaign's test
 * is (services/campaigns/campaignTestSend.ts). It carries no template id and no contact id, so it
 * counts in no contact's history and no template's emails, and no contact is created. An address
 * that is a contact is rendered with that contact's data (and `data` over it); any other address
 * with `data` alone, its links naming no contact. Tracking applies as in any sent email.
 *
 * Refuses an unverified sender domain (403) and a suppressed address (422). Throws
 * TemplateRenderError when the template cannot render for this data and WorkflowStartError when
 * delivery could not be scheduled (nothing is sent then).
 */
export async function sendTemplateTest(
  deps: TemplateTestSendDeps,
  em: EntityManager,
  template: TemplateRow,
  address: string,
  data: Record<string, unknown> = {},
): Promise<TemplateTestSent> {
  const projectId = template.projectId;
  const sender = await deps.senderDomains.findVerified(projectId, template.from);
  if (!sender) throw unverifiedSenderDomain(template.from);
  const suppressed = await emailRepository.suppressedAddresses(em, projectId, [address]);
  if (suppressed.size) {
    throw validationFailed([{ field: 'email', message: `${address} is suppressed after a hard bounce or a complaint; no mail is sent to it`, code: 'custom' }]);
  }

  const contact = await contactRepository.findByEmail(em, projectId, address);
  const emailId = crypto.randomUUID();
  const { email, rendered } = composeEmail(deps.config, {
    id: emailId,
    projectId,
    source: 'TRANSACTIONAL',
    content: { subject: `[TEST] ${template.subject}`, body: template.body, type: template.type },
    sender: { fromAddress: template.from, fromName: template.fromName, replyTo: template.replyTo, domain: sender.domain },
    // No contact: the test counts in no contact's history. Only suppression (refused above) stops it.
    recipient: { toAddress: address, toName: null, contactId: null, suppressed: false, subscribed: true },
    personalisation: {
      contact: contact ?? { id: '', email: address, data: {} },
      requestData: data,
      linkContactId: contact?.id ?? crypto.randomUUID(),
    },
    owners: { templateId: null },
  });
  await deps.deliveries.record(projectId, [email]);
  return { emailId, to: address, subject: rendered.subject };
}
