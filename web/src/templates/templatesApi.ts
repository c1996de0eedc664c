import type { components } from '../../../client/mailroomClient';
import { queryKeys } from '../api/queries';

export type Template = components['schemas']['Template'];
export type TemplateType = Template['type'];
export type TemplatePreview = components['schemas']['TemplatePreview'];

/** The types in words, in the order the form offers them; typed by the API's answer, so a new type fails the build until named. */
export const TYPE_LABELS: Record<TemplateType, string> = {
  MARKETING: 'Marketing',
  TRANSACTIONAL: 'Transactional',
  HEADLESS: 'Headless',
};

export const TYPE_HINTS: Record<TemplateType, string> = {
  MARKETING: 'Gets the unsubscribe footer; not sent to unsubscribed contacts.',
  TRANSACTIONAL: 'Receipts, password resets: sent to unsubscribed contacts too; no footer unless the body uses {{unsubscribeUrl}}.',
  HEADLESS: 'No footer unless the body uses {{unsubscribeUrl}}; a campaign of this type goes to subscribed contacts only.',
};

/** Query keys of the Templates pages, under the project's key so a project switch or a log-out drops them. */
export const templateKeys = {
  all: (projectId: string) => [...queryKeys.project(projectId), 'templates'] as const,
  list: (projectId: string, search: string | undefined, page: number) => [...templateKeys.all(projectId), 'list', { search, page }] as const,
  one: (projectId: string, id: string) => [...templateKeys.all(projectId), 'one', id] as const,
  usage: (projectId: string, id: string) => [...templateKeys.all(projectId), 'usage', id] as const,
  preview: (projectId: string, input: object) => [...queryKeys.project(projectId), 'template-preview', input] as const,
  contacts: (projectId: string, search: string) => [...queryKeys.project(projectId), 'template-preview-contacts', search] as const,
};
