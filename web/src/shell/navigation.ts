import type { InstanceConfig } from '../api/queries';

export interface NavItem {
  /** The link's name (contract 21 fixes them: they are how users and tests find the pages). */
  label: string;
  /** Relative to the project's path: '' is the project's Overview. */
  to: string;
  /** Shown only where this instance has the feature. */
  shownWhen?: (config: InstanceConfig) => boolean;
}

/**
 * The main navigation, in contract 21's order: Overview, Contacts, Segments, Templates, Campaigns,
 * Workflows, Emails, Activity, Domains, Developers, Settings, and Outbox while SMTP is not
 * configured (`shownWhen: (config) => config.localOutbox.enabled`). A page's link is added here
 * with the page: a feature not built yet has no link (its path answers the not-found page).
 */
export const NAV_ITEMS: NavItem[] = [
  { label: 'Overview', to: '' },
  { label: 'Contacts', to: 'contacts' },
  { label: 'Segments', to: 'segments' },
  { label: 'Templates', to: 'templates' },
  { label: 'Campaigns', to: 'campaigns' },
  { label: 'Workflows', to: 'workflows' },
  { label: 'Emails', to: 'emails' },
  { label: 'Activity', to: 'activity' },
  { label: 'Domains', to: 'domains' },
  { label: 'Developers', to: 'developers' },
  { label: 'Settings', to: 'settings' },
  { label: 'Outbox', to: 'outbox', shownWhen: (config) => config.localOutbox.enabled },
];
