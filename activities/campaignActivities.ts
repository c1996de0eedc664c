import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { campaignStatus } from '../services/campaigns/campaignStatus';
import { campaignSendRepository, type CampaignForSend } from '../db/campaigns/campaignSendRepository';
import { campaignAudienceSql } from '../db/campaigns/campaignAudience';
import type { UsageCategory } from '../services/billing/usageCaps';
import { sendCampaignBatch, type CampaignBatchResult } from '../services/campaigns/campaignBatch';
import { ABANDONED_CLAIM_SECONDS, handOverAbandonedWaves } from '../services/campaigns/campaignWaves';

export type { CampaignBatchResult } from '../services/campaigns/campaignBatch';

/**
 * How long the end of a send waits for running batches to hand their last wave over and let their
 * claims go (a dead one's is taken after ABANDONED_CLAIM_SECONDS), within the activity's 5 minutes.
 */
const END_OF_SEND_WAIT_MS = 2 * ABANDONED_CLAIM_SECONDS * 1000;

/** The running activity attempt, unique: a retry of the same activity is another attempt. */
function attemptId(): string {
  const { workflowExecution, activityId, attempt } = Context.current().info;
  return `${workflowExecution?.runId ?? Buffer.from(Context.current().info.taskToken).toString('base64')}/${activityId}/${attempt}`;
}

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
      await handOverAbandonedWaves(services, input.campaignId, attemptId(), { waitMs: END_OF_SEND_WAIT_MS });
    },

    /**
     * Marks a SCHEDULED or SENDING campaign CANCELLED (a cancel that came through Temporal), then
     * hands over the waves its dead batches recorded (campaignWaves.handOverAbandonedWaves).
     */
    async cancelCampaignSend(input: { campaignId: string }): Promise<void> {
      await campaignStatus.endSend(orm.em.fork(), input.campaignId);
      await handOverAbandonedWaves(services, input.campaignId, attemptId(), { waitMs: END_OF_SEND_WAIT_MS });
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

    /** One batch of the audience (services/campaigns/campaignBatch.ts), heartbeating; a cancel reaches it through the heartbeats. */
    async sendCampaignBatch(input: { campaignId: string; afterContactId: string | null; limit: number }): Promise<CampaignBatchResult> {
      const context = Context.current();
      return sendCampaignBatch({ services, logger }, input, {
        heartbeat: (details) => context.heartbeat(details),
        cancelled: () => context.cancellationSignal.aborted,
        attempt: { id: attemptId(), retried: context.info.attempt > 1 },
      });
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
