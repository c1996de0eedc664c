/**
 * Custom search attributes every Mailroom workflow may carry (contract section 14), so an
 * operator can find a project's, contact's or campaign's runs in the Temporal UI.
 * The dev server registers them at start; a self-hosted cluster needs them created once
 * (`temporal operator search-attribute create`, see README).
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const ProjectIdSearchAttribute = defineSearchAttributeKey('ProjectId', 'KEYWORD');
export const ContactIdSearchAttribute = defineSearchAttributeKey('ContactId', 'KEYWORD');
export const CampaignIdSearchAttribute = defineSearchAttributeKey('CampaignId', 'KEYWORD');

export const mailroomSearchAttributes = [ProjectIdSearchAttribute, ContactIdSearchAttribute, CampaignIdSearchAttribute];

/** `--search-attribute Name=Keyword` arguments for `temporal server start-dev`. */
export function devServerSearchAttributeArgs(): string[] {
  return mailroomSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]);
}
