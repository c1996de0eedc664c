import { useEffect, useState } from 'react';
import { keepPreviousData, queryOptions, useQuery } from '@tanstack/react-query';
import type { components } from '../../../client/mailroomClient';
import type { MailroomClient } from '../../../client/mailroomClient';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { conditionText, type ConditionTree as ReadableTree, type SegmentNames } from '../segments/conditionText';

export type Campaign = components['schemas']['Campaign'];
export type CampaignStatus = Campaign['status'];
export type AudienceType = Campaign['audienceType'];
export type CampaignType = Campaign['type'];
export type ConditionTree = components['schemas']['ConditionTree'];

/** Every status in words; typed by the API's answer, so a new status fails the build until it is named here. */
export const STATUS_LABELS: Record<CampaignStatus, string> = {
  DRAFT: 'Draft',
  SCHEDULED: 'Scheduled',
  SENDING: 'Sending',
  SENT: 'Sent',
  CANCELLED: 'Cancelled',
};

export const STATUS_BADGES: Record<CampaignStatus, string> = {
  DRAFT: 'badge',
  SCHEDULED: 'badge badge-campaign-active',
  SENDING: 'badge badge-campaign-active',
  SENT: 'badge badge-success',
  CANCELLED: 'badge badge-danger',
};

export const AUDIENCE_LABELS: Record<AudienceType, string> = {
  ALL: 'All contacts',
  SEGMENT: 'A segment',
  FILTERED: 'Contacts matching a filter',
};

export const TYPE_LABELS: Record<CampaignType, string> = {
  MARKETING: 'Marketing',
  TRANSACTIONAL: 'Transactional',
  HEADLESS: 'Headless',
};

/** What each type means for who receives it and what is added. */
export const TYPE_HINTS: Record<CampaignType, string> = {
  MARKETING: 'Subscribed contacts only, with an unsubscribe footer and one-click unsubscribe headers.',
  TRANSACTIONAL: 'Every contact of the audience, subscribed or not: for notices they must get.',
  HEADLESS: 'Subscribed contacts only; no footer is added (put your own {{unsubscribeUrl}} link in the body).',
};

export const campaignKeys = {
  all: (projectId: string) => [...queryKeys.project(projectId), 'campaigns'] as const,
  one: (projectId: string, id: string) => [...queryKeys.project(projectId), 'campaigns', 'one', id] as const,
  stats: (projectId: string, id: string) => [...queryKeys.project(projectId), 'campaigns', 'stats', id] as const,
  count: (projectId: string, audience: AudienceQuery) => [...queryKeys.project(projectId), 'campaigns', 'audience-count', audience] as const,
};

/** A running send (or one waiting for its time) is polled: contract 21 asks for numbers at least every 5 s. */
export const isActive = (status: CampaignStatus) => status === 'SENDING' || status === 'SCHEDULED';

export function campaignQuery(client: MailroomClient, projectId: string, id: string) {
  return queryOptions({
    queryKey: campaignKeys.one(projectId, id),
    queryFn: () => unwrap(client.GET('/campaigns/{id}', { params: { path: { id } } })),
    refetchInterval: (query) => {
      const status = query.state.data?.status;
      if (status === 'SENDING') return 2_000;
      if (status === 'SCHEDULED') return 5_000;
      return false;
    },
  });
}

/** What the count endpoint takes: a campaign's type and audience. */
export interface AudienceQuery {
  type: CampaignType;
  audienceType: AudienceType;
  segmentId?: string | null;
  audienceCondition?: unknown;
}

/** A value that settles `delay` ms after its last change, so typing does not ask the API at every key. */
export function useDebounced<T>(value: T, delay: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), delay);
    return () => clearTimeout(timer);
  }, [value, delay]);
  return settled;
}

/**
 * The live recipient count (POST /campaigns/audience/count): how many contacts a send of this
 * audience would go to now. Null `audience` (incomplete: no segment chosen, a filter that is not
 * JSON) asks nothing.
 */
export function useRecipientCount(client: MailroomClient, projectId: string, audience: AudienceQuery | null) {
  return useQuery({
    queryKey: campaignKeys.count(projectId, audience ?? { type: 'MARKETING', audienceType: 'ALL' }),
    queryFn: async () => (await unwrap(client.POST('/campaigns/audience/count', { body: audience! }))).data.recipients,
    enabled: audience !== null,
    placeholderData: keepPreviousData,
    staleTime: 5_000,
  });
}

export function audienceOf(campaign: Campaign): AudienceQuery {
  return {
    type: campaign.type,
    audienceType: campaign.audienceType,
    segmentId: campaign.audienceType === 'SEGMENT' ? campaign.segmentId : null,
    audienceCondition: campaign.audienceType === 'FILTERED' ? campaign.audienceCondition : null,
  };
}

export function contactsPhrase(count: number): string {
  return count === 1 ? '1 contact' : `${new Intl.NumberFormat().format(count)} contacts`;
}

/**
 * A condition tree in words (the Segments page's conditionText), or null for a value that is not
 * one yet (a filter being typed): the API says what is wrong with it.
 */
export function readableCondition(value: unknown, segmentNames?: SegmentNames): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const tree = value as Partial<ReadableTree>;
  if ((tree.logic !== 'AND' && tree.logic !== 'OR') || !Array.isArray(tree.groups)) return null;
  try {
    return conditionText(tree as ReadableTree, segmentNames);
  } catch {
    return null;
  }
}
