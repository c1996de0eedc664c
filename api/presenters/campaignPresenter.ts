import type { CampaignRow } from '../../db/campaigns/campaignRepository';

/** The API shape of a campaign (specification, "Campaign"). */
export function serializeCampaign(campaign: CampaignRow) {
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
    audienceCondition: campaign.audienceCondition,
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
