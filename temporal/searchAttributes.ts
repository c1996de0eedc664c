/**
 * Custom search attributes every Mailroom workflow may carry (contract section 14), so an
 * operator can find a project's, contact's or campaign's runs in the Temporal UI.
 * The dev server registers them at start; on another cluster the API and the worker add the
 * missing ones, and where the server refuses (Temporal Cloud) they are created once by hand
 * (`temporal operator search-attribute create`, see docs/guides/temporal-cluster.md, "What Mailroom
 * registers itself").
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const ProjectIdSearchAttribute = defineSearchAttributeKey('ProjectId', 'KEYWORD');
export const ContactIdSearchAttribute = defineSearchAttributeKey('ContactId', 'KEYWORD');
export const CampaignIdSearchAttribute = defineSearchAttributeKey('CampaignId', 'KEYWORD');

/** The emails a delivery workflow carries, so an operator finds any email's delivery by its id. */
export const EmailIdsSearchAttribute = defineSearchAttributeKey('EmailIds', 'KEYWORD_LIST');

export const mailroomSearchAttributes = [ProjectIdSearchAttribute, ContactIdSearchAttribute, CampaignIdSearchAttribute, EmailIdsSearchAttribute];

const DEV_SERVER_TYPE_NAMES: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList' };

/** `--search-attribute Name=Keyword` arguments for `temporal server start-dev`. */
export function devServerSearchAttributeArgs(): string[] {
  return mailroomSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=${DEV_SERVER_TYPE_NAMES[key.type]}`]);
}
