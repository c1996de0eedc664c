import type { EntityManager } from '@mikro-orm/postgresql';
import type { CampaignForSend } from './campaignSendRepository';
import { compileCondition, loadReferencedSegments, segmentMemberSqlFor, type ConditionTree } from '../conditions';
import { segmentRepository } from '../segments/segmentRepository';

/**
 * The audience of a campaign as a query selecting contact ids (contract 11): every contact of the
 * project, a segment's live members, or the contacts an audience condition matches, the last two
 * through the one condition compiler (db/conditions). A segment deleted since the send was asked
 * for leaves an empty audience.
 */
export async function campaignAudienceSql(em: EntityManager, campaign: CampaignForSend): Promise<{ sql: string; params: unknown[] }> {
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
