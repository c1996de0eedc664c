import type { EntityManager } from '@mikro-orm/postgresql';
import { campaignRepository, type CampaignRow, type CampaignStats } from '../../db/campaigns/campaignRepository';

export interface CampaignStatsWithRates extends CampaignStats {
  openRate: number;
  clickRate: number;
  bounceRate: number;
  deliveryRate: number;
}

/** A rate in percent of `sentCount`, two decimals; 0 when nothing was sent. */
const rate = (count: number, sent: number) => (sent > 0 ? Math.round((count / sent) * 10_000) / 100 : 0);

/** GET /campaigns/:id/stats: the campaign's counts and the rates of its sent mail. */
export async function campaignStats(em: EntityManager, campaign: CampaignRow): Promise<CampaignStatsWithRates> {
  const stats = await campaignRepository.stats(em, campaign);
  return {
    ...stats,
    openRate: rate(stats.openedCount, stats.sentCount),
    clickRate: rate(stats.clickedCount, stats.sentCount),
    bounceRate: rate(stats.bouncedCount, stats.sentCount),
    deliveryRate: rate(stats.deliveredCount, stats.sentCount),
  };
}
