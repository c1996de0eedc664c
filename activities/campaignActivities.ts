import crypto from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { campaignStatus } from '../services/campaigns/campaignStatus';
import { campaignSendRepository, type CampaignForSend } from '../db/campaigns/campaignSendRepository';
import { campaignAudienceSql } from '../db/campaigns/campaignAudience';
import { emailRepository, type NewEmail } from '../db/emails/emailRepository';
import { recipientRefusal } from '../services/sending/recipientRefusal';
import { domainRepository } from '../db/domains/domainRepository';
import { deliverRecordedEmails } from '../services/sending/recordedEmailDelivery';
import { renderEmail } from '../mail/rendering/renderEmail';
import { templateVariables } from '../services/sending/templateVariables';
import { emailLinks } from '../mail/links/signedLinks';
import { usageCaps, type UsageCategory } from '../db/billing/usageCaps';

export interface CampaignBatchResult {
  /** The campaign is no longer SENDING (cancelled, deleted): stop. */
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

/**
 * Emails a campaign batch hands to the transport at once. Larger than a transactional wave: a
 * campaign's throughput comes from it, and a worker killed mid-batch can repeat only this many.
 */
const CAMPAIGN_WAVE = 25;

export function createCampaignActivities({ config, orm, mail, campaignMail, logger, eventTriggers }: ActivityDeps) {
  // Campaign mail leaves through its own SMTP connections, so a running campaign never queues
  // transactional mail behind it in one pool.
  const services = { config, orm, transport: campaignMail ?? mail, eventTriggers };

  return {
    /** What the send needs to plan: the state, the schedule, the project's rate cap and the retry delays. */
    async loadCampaignForSend(input: { campaignId: string }): Promise<{
      status: CampaignForSend['status'];
      scheduledFor: string | null;
      ratePerSecond: number | null;
      retryDelaysSeconds: number[];
      maxHistoryEvents: number | null;
    } | null> {
      const campaign = await campaignSendRepository.find(orm.em.fork(), input.campaignId);
      if (!campaign) return null;
      return {
        status: campaign.status,
        scheduledFor: campaign.scheduledFor?.toISOString() ?? null,
        ratePerSecond: campaign.ratePerSecond ?? config.campaignRatePerSecond,
        retryDelaysSeconds: config.deliveryRetryDelaysSeconds,
        maxHistoryEvents: config.campaignHistoryEvents,
      };
    },

    /**
     * Ends a send its monthly cap stopped: CANCELLED, with the reason the campaign shows
     * (`stopReason`), and its unattempted emails withdrawn.
     */
    async stopCampaignAtCap(input: { campaignId: string; category: UsageCategory; limit: number | null; sent: number }): Promise<void> {
      await campaignStatus.stopAtCap(orm.em.fork(), input.campaignId, input);
    },

    /** Marks a SCHEDULED or SENDING campaign CANCELLED (a cancel that came through Temporal). */
    async cancelCampaignSend(input: { campaignId: string }): Promise<void> {
      await campaignStatus.endSend(orm.em.fork(), input.campaignId);
    },

    /** SCHEDULED → SENDING; false when the campaign was cancelled or deleted meanwhile. */
    async beginCampaignSend(input: { campaignId: string }): Promise<boolean> {
      return campaignStatus.begin(orm.em.fork(), input.campaignId);
    },

    /** Fixes the audience (once); answers the number of recipients. */
    async fixCampaignAudience(input: { campaignId: string }): Promise<number> {
      const em = orm.em.fork();
      const campaign = await campaignSendRepository.find(em, input.campaignId);
      if (!campaign || campaign.status !== 'SENDING') return 0;
      const audience = await campaignAudienceSql(em, campaign);
      return campaignSendRepository.fixAudience(em, campaign, audience);
    },

    /**
     * One batch of the audience, from `afterContactId` on: renders and records one email per
     * recipient (the unique (campaign, contact) key makes a repeated batch find the emails it
     * recorded before instead of recording more), then delivers them through the one delivery
     * path. Stops at once when the campaign is no longer SENDING.
     */
    async sendCampaignBatch(input: { campaignId: string; afterContactId: string | null; limit: number }): Promise<CampaignBatchResult> {
      const context = Context.current();
      const em = orm.em.fork();
      const none = { recipients: 0, sent: 0, failed: 0, suppressed: 0, retry: [] };
      const campaign = await campaignSendRepository.find(em, input.campaignId);
      if (!campaign || campaign.status !== 'SENDING') return { stopped: true, nextCursor: null, ...none };

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
      const emails: NewEmail[] = page.contacts.map((contact) => {
        const id = crypto.randomUUID();
        const links = emailLinks(config.publicUrl, config.secret, { emailId: id, contactId: contact.id });
        const rendered = renderEmail({
          subject: campaign.subject,
          body: campaign.body,
          type: campaign.type,
          variables: templateVariables(contact, {}, links),
          links,
          tracking: { opens: config.trackOpens, clicks: config.trackClicks },
        });
        // The audience holds only subscribed contacts where the type asks for it; one who
        // unsubscribed since is caught here and again just before sending.
        const refusal = recipientRefusal({ type: campaign.type }, { suppressed: suppressed.has(contact.email), subscribed: contact.subscribed });
        return {
          id,
          projectId: campaign.projectId,
          contactId: contact.id,
          templateId: null,
          campaignId: campaign.id,
          source: 'CAMPAIGN',
          type: campaign.type,
          subject: rendered.subject,
          fromAddress: campaign.fromAddress,
          fromName: campaign.fromName,
          replyTo: campaign.replyTo,
          toAddress: contact.email,
          toName: null,
          html: rendered.html,
          text: rendered.text,
          headers: rendered.headers,
          attachmentSetId: null,
          status: refusal ? 'SUPPRESSED' : 'QUEUED',
          error: refusal,
          messageId: `<${id}@${senderDomain}>`,
          deliveryWorkflowId: `campaign-${campaign.id}`,
        };
      });
      // Recorded and counted against the campaigns cap together: a batch the cap cuts short keeps
      // the first recipients it can take (in contact order) and the campaign stops after it.
      const cap = await em.transactional(async (tx) => {
        const inserted = new Set(await emailRepository.insertMany(tx, emails, { skipExistingCampaignEmails: true }));
        const queued = emails.filter((e) => e.status === 'QUEUED' && inserted.has(e.id)).map((e) => e.id);
        const { granted, limit } = await usageCaps.reserveUpTo(tx, campaign.projectId, 'campaigns', queued.length);
        const cut = queued.slice(granted);
        if (cut.length) await tx.execute(`delete from emails where id = any(?::uuid[])`, [`{${cut.join(',')}}`]);
        return { reached: cut.length > 0, limit };
      });
      const emailIds = await campaignSendRepository.emailIdsFor(
        em,
        campaign.id,
        page.contacts.map((c) => c.id),
      );
      context.heartbeat({ recorded: emailIds.length });

      const owner = `campaign-${campaign.id}/${input.afterContactId ?? 'start'}`;
      const result = await deliverRecordedEmails(services, emailIds, owner, {
        waveSize: CAMPAIGN_WAVE,
        onWave: (done) => context.heartbeat({ done }),
        // A cancel reaches a running batch through its heartbeats or the campaign's status.
        shouldStop: async () => context.cancellationSignal.aborted || !(await campaignSendRepository.isSending(orm.em.fork(), campaign.id)),
      });
      await campaignSendRepository.refreshSentCount(em, campaign.id);
      if (result.retry.length)
        logger.warn({ campaignId: campaign.id, emails: result.retry.length }, 'campaign: temporary delivery failures; handing them to a delivery workflow');
      if (cap.reached) {
        logger.info(
          { campaignId: campaign.id, projectId: campaign.projectId, limit: cap.limit },
          'campaign: the monthly campaigns cap is reached; the send stops',
        );
        return { stopped: false, nextCursor, recipients: emailIds.length, ...result, capReached: { category: 'campaigns', limit: cap.limit } };
      }
      return { stopped: false, nextCursor, recipients: page.contacts.length, ...result };
    },

    /** Where the next batches start (see campaignSendRepository.batchStarts). */
    async planCampaignBatches(input: { campaignId: string; afterContactId: string | null; batchSize: number; count: number }) {
      return campaignSendRepository.batchStarts(orm.em.fork(), input.campaignId, input.afterContactId, input.batchSize, input.count);
    },

    /** SENDING → SENT with sentAt; false when it was cancelled meanwhile. */
    async finishCampaignSend(input: { campaignId: string }): Promise<boolean> {
      return campaignStatus.finish(orm.em.fork(), input.campaignId);
    },
  };
}
export type CampaignActivities = ReturnType<typeof createCampaignActivities>;
