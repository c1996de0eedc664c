import type { AudienceQuery, AudienceType, Campaign, CampaignType } from './campaignData';

/** The composer's fields as the form holds them (strings, the filter as JSON text). */
export interface ComposeValues {
  name: string;
  subject: string;
  from: string;
  fromName: string;
  replyTo: string;
  type: CampaignType;
  body: string;
  audienceType: AudienceType;
  segmentId: string;
  audienceCondition: string;
}

export const COMPOSE_FIELDS = ['name', 'subject', 'from', 'fromName', 'replyTo', 'type', 'body', 'audienceType', 'segmentId', 'audienceCondition'] as const;

export function valuesOf(campaign: Campaign): ComposeValues {
  return {
    name: campaign.name,
    subject: campaign.subject,
    from: campaign.from,
    fromName: campaign.fromName ?? '',
    replyTo: campaign.replyTo ?? '',
    type: campaign.type,
    body: campaign.body,
    audienceType: campaign.audienceType,
    segmentId: campaign.segmentId ?? '',
    audienceCondition: campaign.audienceCondition ? JSON.stringify(campaign.audienceCondition, null, 2) : '',
  };
}

/** The filter's JSON, parsed; undefined when it is not JSON (the API would refuse it anyway). */
export function parseCondition(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, message: `The filter is not valid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
}

/** The audience as the count endpoint and the campaign body take it; null while incomplete. */
export function audienceFrom(values: Pick<ComposeValues, 'type' | 'audienceType' | 'segmentId' | 'audienceCondition'>): AudienceQuery | null {
  if (values.audienceType === 'SEGMENT') return values.segmentId ? { type: values.type, audienceType: 'SEGMENT', segmentId: values.segmentId } : null;
  if (values.audienceType === 'FILTERED') {
    const parsed = parseCondition(values.audienceCondition);
    return parsed.ok ? { type: values.type, audienceType: 'FILTERED', audienceCondition: parsed.value } : null;
  }
  return { type: values.type, audienceType: 'ALL' };
}

/** The body of POST /campaigns and PUT /campaigns/:id: empty optional fields clear them (null). */
export function campaignBody(values: ComposeValues, audienceCondition: unknown) {
  return {
    name: values.name,
    subject: values.subject,
    from: values.from,
    fromName: values.fromName.trim() || null,
    replyTo: values.replyTo.trim() || null,
    type: values.type,
    body: values.body,
    audienceType: values.audienceType,
    segmentId: values.audienceType === 'SEGMENT' ? values.segmentId || null : null,
    audienceCondition: values.audienceType === 'FILTERED' ? audienceCondition : null,
  };
}
