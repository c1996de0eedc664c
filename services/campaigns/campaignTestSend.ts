import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed } from '../../lib/errors';
import type { CampaignRow } from '../../db/campaigns/campaignRepository';
import { contactRepository } from '../../db/contacts/contactRepository';
import { emailRepository } from '../../db/emails/emailRepository';
import { composeEmail, type ComposerConfig } from '../sending/emailComposer';
import type { DeliveryScheduler } from '../sending/deliveryScheduler';
import { unverifiedSenderDomain, type SenderDomainLookup } from '../domains/senderDomainLookup';

/** What a test send needs: the composer's settings, the sender-domain rule and the one delivery path. */
export interface CampaignTestSendDeps {
  config: ComposerConfig;
  senderDomains: SenderDomainLookup;
  deliveries: DeliveryScheduler;
}

export interface CampaignTestSent {
  emailId: string;
  to: string;
  /** The subject as rendered for this address, `[TEST] ` first. */
  subject: string;
}

/**
 * POST /campaigns/:id/test: one rendered copy of a campaign to one address through the one send
 * path, subject `[TEST] …`. It carries no campaign id and no contact id, so it counts in no
 * statistics and no contact's history, and no contact is created. An address that is a contact is
 * rendered with that contact's data and links; any other address with empty data, its links naming
 * no contact.
 *
 * Refuses an unverified sender domain (403) and a suppressed address (422). Throws
 * TemplateRenderError when the template cannot render for this address's data and
 * WorkflowStartError when delivery could not be scheduled (nothing is sent then).
 */
export async function sendCampaignTest(deps: CampaignTestSendDeps, em: EntityManager, campaign: CampaignRow, address: string): Promise<CampaignTestSent> {
  const projectId = campaign.projectId;
  const sender = await deps.senderDomains.findVerified(projectId, campaign.from);
  if (!sender) throw unverifiedSenderDomain(campaign.from);
  const suppressed = await emailRepository.suppressedAddresses(em, projectId, [address]);
  if (suppressed.size) {
    throw validationFailed([{ field: 'email', message: `${address} is suppressed after a hard bounce or a complaint; no mail is sent to it`, code: 'custom' }]);
  }

  const contact = await contactRepository.findByEmail(em, projectId, address);
  const emailId = crypto.randomUUID();
  const { email, rendered } = composeEmail(deps.config, {
    id: emailId,
    projectId,
    source: 'CAMPAIGN',
    content: { subject: `[TEST] ${campaign.subject}`, body: campaign.body, type: campaign.type },
    sender: { fromAddress: campaign.from, fromName: campaign.fromName, replyTo: campaign.replyTo, domain: sender.domain },
    // No contact: the test counts in no contact's history. Only suppression (refused above) stops it.
    recipient: { toAddress: address, toName: null, contactId: null, suppressed: false, subscribed: true },
    personalisation: {
      contact: contact ?? { id: '', email: address, data: {} },
      requestData: {},
      linkContactId: contact?.id ?? crypto.randomUUID(),
    },
    // No campaign id: the test counts in none of the campaign's statistics.
    owners: { templateId: null, campaignId: null },
  });
  await deps.deliveries.record(projectId, [email]);
  return { emailId, to: address, subject: rendered.subject };
}
