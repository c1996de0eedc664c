import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound, validationFailed } from '../../lib/errors';
import { campaignRepository, type CampaignFields } from '../../db/campaigns/campaignRepository';
import { countCampaignAudience } from '../../db/campaigns/campaignAudience';
import { checkAudienceFields } from './campaignEditing';

/**
 * POST /campaigns/audience/count: how many contacts a campaign of this type and audience would be
 * sent to if it were sent now (the `totalRecipients` its send would fix), so a composer can show
 * the count while the audience is chosen, before anything is saved. The audience is checked as a
 * campaign's is (422 for missing or invalid fields, 404 for an unknown segment).
 */
export async function countAudience(
  em: EntityManager,
  projectId: string,
  fields: Pick<CampaignFields, 'type' | 'audienceType' | 'segmentId' | 'audienceCondition'>,
): Promise<number> {
  const { problems, audience } = await checkAudienceFields(em, projectId, fields);
  if (problems.length) throw validationFailed(problems);
  if (audience.segmentId && !(await campaignRepository.segmentExists(em, projectId, audience.segmentId))) throw notFound('segment', audience.segmentId);
  return countCampaignAudience(em, { projectId, type: fields.type, audienceType: fields.audienceType, ...audience });
}
