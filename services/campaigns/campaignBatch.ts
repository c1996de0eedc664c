import crypto from 'node:crypto';
import type { Logger } from '../../lib/logger';
import { campaignSendRepository } from '../../db/campaigns/campaignSendRepository';
import { emailRepository, type NewEmail } from '../../db/emails/emailRepository';
import { domainRepository } from '../../db/domains/domainRepository';
import { usageCaps, type UsageCategory } from '../billing/usageCaps';
import { CLAIM_HOLD_SECONDS, deliverRecordedEmails, type DeliveryServices } from '../sending/recordedEmailDelivery';
import { composeEmail } from '../sending/emailComposer';
import { campaignWorkflowId } from '../../temporal/deliveryWorkflowStart';
import { campaignStatus } from './campaignStatus';
import { CAMPAIGN_WAVE, campaignBatchOwner } from './campaignBatchClaims';

export interface CampaignBatchResult {
  /** The campaign is no longer SENDING (cancelled, deleted, stopped because its project was disabled): stop. */
  stopped: boolean;
  /** The last recipient this batch covered (the workflow plans batches with planCampaignBatches). */
  nextCursor: string | null;
  recipients: number;
  sent: number;
  failed: number;
  suppressed: number;
  /** Emails that failed temporarily, handed to a delivery workflow with its retries. */
  retry: string[];
  /** Set when the project's monthly campaigns cap cut this batch short: the send stops after it. */
  capReached?: { category: UsageCategory; limit: number | null };
}

export interface CampaignBatchDeps {
  /** Delivery through the campaign's own transport. */
  services: DeliveryServices;
  logger: Logger;
}

/** How the batch reports progress to whoever runs it and learns that it is cancelled (a Temporal activity's heartbeats). */
export interface CampaignBatchControl {
  heartbeat(details: Record<string, unknown>): void;
  cancelled(): boolean;
}

/**
 * One batch of the audience, from `afterContactId` on: renders and records one email per
 * recipient (the unique (campaign, contact) key makes a repeated batch find the emails it
 * recorded before instead of recording more), recorded already claimed by the batch's own
 * delivery (one row version fewer per email than claiming them afterwards), then delivers them
 * through the one delivery path; a repeated attempt takes over its claims under the same owner. Stops at once when the campaign is no longer SENDING, and between waves when its
 * project is disabled: then the batch ends the send itself (CANCELLED with the reason), so
 * every running batch sees the campaign is no longer SENDING.
 */
export async function sendCampaignBatch(
  deps: CampaignBatchDeps,
  input: { campaignId: string; afterContactId: string | null; limit: number },
  control: CampaignBatchControl,
): Promise<CampaignBatchResult> {
  const { services, logger } = deps;
  const { config, orm } = services;
  const em = orm.em.fork();
  const none = { recipients: 0, sent: 0, failed: 0, suppressed: 0, retry: [] };
  const campaign = await campaignSendRepository.find(em, input.campaignId);
  if (!campaign || campaign.status !== 'SENDING') return { stopped: true, nextCursor: null, ...none };
  if (campaign.projectDisabled) {
    await stopForDisabledProject(deps, campaign.id, campaign.projectId, campaign.projectDisabledReason);
    return { stopped: true, nextCursor: null, ...none };
  }

  const page = await campaignSendRepository.recipientsPage(em, campaign.id, input.afterContactId, input.limit);
  const nextCursor = page.lastContactId;
  if (!page.contacts.length) return { stopped: false, nextCursor, ...none };

  const domain = await domainRepository.findSigningDomain(em, campaign.projectId, campaign.fromAddress);
  const senderDomain = domain?.domain ?? campaign.fromAddress.split('@')[1];
  const suppressed = await emailRepository.suppressedAddresses(
    em,
    campaign.projectId,
    page.contacts.map((c) => c.email),
  );
  const emails: NewEmail[] = page.contacts.map(
    (contact) =>
      composeEmail(config, {
        id: crypto.randomUUID(),
        projectId: campaign.projectId,
        source: 'CAMPAIGN',
        content: { subject: campaign.subject, body: campaign.body, type: campaign.type },
        sender: { fromAddress: campaign.fromAddress, fromName: campaign.fromName, replyTo: campaign.replyTo, domain: senderDomain },
        // The audience holds only subscribed contacts where the type asks for it; one who
        // unsubscribed since is caught here and again just before sending.
        recipient: {
          toAddress: contact.email,
          toName: null,
          contactId: contact.id,
          suppressed: suppressed.has(contact.email),
          subscribed: contact.subscribed,
        },
        personalisation: { contact, requestData: {}, linkContactId: contact.id },
        owners: { templateId: null, campaignId: campaign.id },
        // The campaign's own workflow delivers them (the delivery sweep leaves campaign mail alone).
        deliveryWorkflowId: campaignWorkflowId(campaign.id),
      }).email,
  );
  const owner = campaignBatchOwner(campaign.id, input.afterContactId);
  // Recorded and counted against the campaigns cap together: a batch the cap cuts short keeps
  // the first recipients it can take (in contact order) and the campaign stops after it.
  const cap = await em.transactional(async (tx) => {
    const inserted = new Set(
      await emailRepository.insertMany(tx, emails, { skipExistingCampaignEmails: true, claimedBy: { owner, holdSeconds: CLAIM_HOLD_SECONDS } }),
    );
    const queued = emails.filter((e) => e.status === 'QUEUED' && inserted.has(e.id)).map((e) => e.id);
    const { granted, limit } = await usageCaps.reserveUpTo(tx, campaign.projectId, 'campaigns', queued.length);
    const cut = queued.slice(granted);
    if (cut.length) await campaignSendRepository.deleteBeyondCap(tx, cut);
    return { reached: cut.length > 0, limit, allRecordedNow: inserted.size === emails.length, cut: new Set(cut) };
  });
  // A first attempt recorded every email itself and holds them; a repeated one asks which exist.
  const recorded = cap.allRecordedNow ? new Map(emails.filter((e) => !cap.cut.has(e.id)).map((e) => [e.id, e])) : undefined;
  const emailIds = recorded
    ? [...recorded.keys()]
    : await campaignSendRepository.emailIdsFor(
        em,
        campaign.id,
        page.contacts.map((c) => c.id),
      );
  control.heartbeat({ recorded: emailIds.length });

  let disabled: { disabledReason: string | null } | undefined;
  const { notHandedOver, ...result } = await deliverRecordedEmails(services, emailIds, owner, {
    recorded,
    waveSize: CAMPAIGN_WAVE,
    onWave: (done) => control.heartbeat({ done }),
    onWait: () => control.heartbeat({ waitingForDatabase: true }),
    // A cancel reaches a running batch through its heartbeats or the campaign's status; a
    // disabled project through its row, read with the status.
    shouldStop: async () => {
      if (control.cancelled()) return true;
      const send = await campaignSendRepository.sendState(orm.em.fork(), campaign.id);
      if (send.state === 'PROJECT_DISABLED') disabled = send;
      return send.state !== 'SENDING';
    },
  });
  // Stopped before handing them all over: the claims it recorded and did not use are let go.
  if (notHandedOver?.length) await campaignSendRepository.releaseNotHandedOver(orm.em.fork(), campaign.id, owner, notHandedOver);
  await campaignSendRepository.refreshSentCount(em, campaign.id);
  if (disabled) {
    await stopForDisabledProject(deps, campaign.id, campaign.projectId, disabled.disabledReason);
    return { stopped: true, nextCursor, recipients: emailIds.length, ...result };
  }
  if (result.retry.length)
    logger.warn({ campaignId: campaign.id, emails: result.retry.length }, 'campaign: temporary delivery failures; handing them to a delivery workflow');
  if (cap.reached) {
    logger.info({ campaignId: campaign.id, projectId: campaign.projectId, limit: cap.limit }, 'campaign: the monthly campaigns cap is reached; the send stops');
    return { stopped: false, nextCursor, recipients: emailIds.length, ...result, capReached: { category: 'campaigns', limit: cap.limit } };
  }
  return { stopped: false, nextCursor, recipients: page.contacts.length, ...result };
}

async function stopForDisabledProject(deps: CampaignBatchDeps, campaignId: string, projectId: string, disabledReason: string | null): Promise<void> {
  await campaignStatus.stopForDisabledProject(deps.services.orm.em.fork(), campaignId, disabledReason);
  deps.logger.warn({ campaignId, projectId, disabledReason }, 'campaign: the project is disabled; the send stops');
}
