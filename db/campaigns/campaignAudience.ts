import type { EntityManager } from '@mikro-orm/postgresql';
import { audienceIsSubscribedOnly, type CampaignForSend } from './campaignSendRepository';
import { compileCondition, loadReferencedSegments, segmentMemberSqlFor, type ConditionTree } from '../conditions';
import { segmentRepository } from '../segments/segmentRepository';
import { queryRows } from '../sql/rows';

/** What names a campaign's audience: its type and the field that type reads. */
export type CampaignAudience = Pick<CampaignForSend, 'projectId' | 'audienceType' | 'segmentId' | 'audienceCondition'>;

/**
 * The audience of a campaign as a query selecting contact ids (contract 11): every contact of the
 * project, a segment's live members, or the contacts an audience condition matches, the last two
 * through the one condition compiler (db/conditions). A segment deleted since the send was asked
 * for leaves an empty audience.
 */
export async function campaignAudienceSql(em: EntityManager, campaign: CampaignAudience): Promise<{ sql: string; params: unknown[] }> {
  if (campaign.audienceType === 'ALL') return { sql: 'select id from contacts where project_id = ?', params: [campaign.projectId] };
  if (campaign.audienceType === 'SEGMENT') {
    const segment = campaign.segmentId ? await segmentRepository.findById(em, campaign.projectId, campaign.segmentId) : null;
    if (!segment) return { sql: 'select null::uuid where false', params: [] };
    return segmentMemberSqlFor(em, segment);
  }
  const tree = campaign.audienceCondition as ConditionTree;
  const segments = await loadReferencedSegments(em, campaign.projectId, tree);
  const condition = compileCondition(tree, { projectId: campaign.projectId, segments });
  return { sql: `select c.id from contacts c where c.project_id = ? and ${condition.sql}`, params: [campaign.projectId, ...condition.params] };
}

/**
 * How many contacts a send of this audience would fix as its recipients now: the audience's
 * contacts, only the subscribed ones for a MARKETING or HEADLESS campaign, as
 * campaignSendRepository.fixAudience selects them.
 */
export async function countCampaignAudience(em: EntityManager, audience: CampaignAudience & Pick<CampaignForSend, 'type'>): Promise<number> {
  const subscribedOnly = audienceIsSubscribedOnly(audience.type);
  const { sql, params } = await campaignAudienceSql(em, audience);
  const [row] = await queryRows<{ count: number }>(
    em,
    `select count(*)::int as count from contacts c where c.project_id = ? and c.id in (${sql}) ${subscribedOnly ? 'and c.subscribed' : ''}`,
    [audience.projectId, ...params],
  );
  return row.count;
}
