import type { z } from 'zod';
import type { CampaignRow } from '../../db/campaigns/campaignRepository';
import type { ConditionTree } from '../../db/conditions';
import type { campaignResponse } from '../schemas/campaignSchemas';

/** The API shape of a campaign (specification, "Campaign"). */
export function serializeCampaign(campaign: CampaignRow): z.input<typeof campaignResponse> {
  return {
    id: campaign.id,
    name: campaign.name,
    description: campaign.description,
    subject: campaign.subject,
    body: campaign.body,
    from: campaign.from,
    fromName: campaign.fromName,
    replyTo: campaign.replyTo,
    type: campaign.type,
    status: campaign.status,
    audienceType: campaign.audienceType,
    segmentId: campaign.segmentId,
    // Stored only after conditionTreeSchema accepted it.
    audienceCondition: campaign.audienceCondition as ConditionTree | null,
    scheduledFor: campaign.scheduledFor,
    totalRecipients: campaign.totalRecipients,
    sentCount: campaign.sentCount,
    deliveredCount: campaign.counts.delivered,
    openedCount: campaign.counts.opened,
    clickedCount: campaign.counts.clicked,
    bouncedCount: campaign.counts.bounced,
    projectId: campaign.projectId,
    sentAt: campaign.sentAt,
    cancelledAt: campaign.cancelledAt,
    stopReason: campaign.stopReason,
    createdAt: campaign.createdAt,
    updatedAt: campaign.updatedAt,
  };
}
