import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, notFound, validationFailed, type FieldError } from '../../lib/errors';
import { campaignRepository, type CampaignFields, type CampaignRow } from '../../db/campaigns/campaignRepository';
import { ACTIVE_STATUSES, EDITABLE_STATUSES } from './campaignStatus';
import { validateConditionTree } from '../../db/conditions';
import { checkTemplate } from '../../mail/rendering/renderEmail';
import { unverifiedSenderDomain, type SenderDomainLookup } from '../domains/senderDomainLookup';
import { notDraft } from './campaignSending';

/** What writing a campaign's fields needs: the sender-domain rule. */
export interface CampaignEditingDeps {
  senderDomains: SenderDomainLookup;
}

/**
 * The audience fields against the audience type (the problems are a 422's `errors` items), and
 * the fields kept: only the type's own (ALL needs neither, specification). Whether the segment
 * exists is the caller's check (a 404).
 */
export async function checkAudienceFields(
  em: EntityManager,
  projectId: string,
  fields: Pick<CampaignFields, 'audienceType' | 'segmentId' | 'audienceCondition'>,
): Promise<{ problems: FieldError[]; audience: { segmentId: string | null; audienceCondition: unknown } }> {
  const problems: FieldError[] = [];
  const audience = { segmentId: null as string | null, audienceCondition: null as unknown };
  if (fields.audienceType === 'SEGMENT') {
    if (!fields.segmentId) problems.push({ field: 'segmentId', message: 'segmentId is required when audienceType is SEGMENT', code: 'invalid_type' });
    audience.segmentId = fields.segmentId;
  } else if (fields.audienceType === 'FILTERED') {
    if (fields.audienceCondition == null) {
      problems.push({ field: 'audienceCondition', message: 'audienceCondition is required when audienceType is FILTERED', code: 'invalid_type' });
    } else {
      problems.push(...(await validateConditionTree(em, projectId, fields.audienceCondition, { path: 'audienceCondition' })));
    }
    audience.audienceCondition = fields.audienceCondition;
  }
  return { problems, audience };
}

/**
 * Checks a campaign's fields as they will be stored (after a PUT, the merge of old and new):
 * audience fields against the audience type (422, the segment's absence 404), template syntax
 * (422 naming the field), and the sender-domain rule when `from` is new (403).
 */
async function checkCampaign(
  deps: CampaignEditingDeps,
  em: EntityManager,
  projectId: string,
  fields: CampaignFields,
  fromChanged: boolean,
): Promise<CampaignFields> {
  const { problems, audience } = await checkAudienceFields(em, projectId, fields);
  for (const p of checkTemplate({ subject: fields.subject, body: fields.body })) problems.push({ field: p.field, message: p.message, code: 'custom' });
  if (problems.length) throw validationFailed(problems);

  if (audience.segmentId && !(await campaignRepository.segmentExists(em, projectId, audience.segmentId))) throw notFound('segment', audience.segmentId);
  if (fromChanged && !(await deps.senderDomains.findVerified(projectId, fields.from))) throw unverifiedSenderDomain(fields.from);
  // Only the audience type's own field is kept: ALL needs neither (specification).
  return { ...fields, ...audience };
}

/** A new DRAFT from validated fields, once the audience, template and sender rules accept them. */
export async function createCampaign(deps: CampaignEditingDeps, em: EntityManager, projectId: string, fields: CampaignFields): Promise<CampaignRow> {
  return campaignRepository.create(em, projectId, await checkCampaign(deps, em, projectId, fields, true));
}

/**
 * Replaces the fields given and keeps the others, in DRAFT and SCHEDULED only. `readChanges` is
 * called after the status check, so a campaign that can no longer be edited is refused (400)
 * whatever the body holds. The sender-domain rule applies only when `from` changes: a draft saved
 * while its domain was verified may still be renamed after the domain is lost (the send refuses it).
 */
export async function updateCampaign(
  deps: CampaignEditingDeps,
  em: EntityManager,
  campaign: CampaignRow,
  readChanges: () => Partial<CampaignFields>,
): Promise<CampaignRow> {
  if (!EDITABLE_STATUSES.includes(campaign.status)) throw notDraft('edited', campaign.status);
  const given = Object.fromEntries(Object.entries(readChanges()).filter(([, value]) => value !== undefined)) as Partial<CampaignFields>;
  const merged: CampaignFields = { ...campaign, ...given };
  const fields = await checkCampaign(deps, em, campaign.projectId, merged, merged.from !== campaign.from);
  const updated = await campaignRepository.updateWhileStatusIn(em, campaign.projectId, campaign.id, EDITABLE_STATUSES, fields);
  if (updated) return updated;
  // The state moved between the read and the write (a send started, the campaign was deleted).
  const current = await campaignRepository.findById(em, campaign.projectId, campaign.id);
  if (!current) throw notFound('campaign', campaign.id);
  throw notDraft('edited', current.status);
}

/** Deletes a campaign unless its send is under way (409: cancel it first). `id` is a uuid as the client wrote it. */
export async function deleteCampaign(em: EntityManager, projectId: string, id: string): Promise<void> {
  const result = await campaignRepository.deleteUnlessActive(em, projectId, id.toLowerCase(), ACTIVE_STATUSES);
  if (result === 'missing') throw notFound('campaign', id);
  if (result !== 'deleted') {
    throw conflict(`A ${result.active} campaign cannot be deleted; cancel it first (POST /campaigns/${id}/cancel)`, {
      resource: 'campaign',
      id,
      status: result.active,
    });
  }
}
