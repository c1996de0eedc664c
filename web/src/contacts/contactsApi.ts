import type { components } from '../../../client/mailroomClient';
import { queryKeys } from '../api/queries';

export type Contact = components['schemas']['Contact'];
export type Job = components['schemas']['Job'];
export type ContactEvent = components['schemas']['Event'];
export type Email = components['schemas']['Email'];

export type SortOrder = 'createdAt-desc' | 'createdAt-asc' | 'email-asc' | 'email-desc';

/** The sorts GET /contacts offers (`sort` and `dir`), in words. */
export const SORT_LABELS: Record<SortOrder, string> = {
  'createdAt-desc': 'Newest first',
  'createdAt-asc': 'Oldest first',
  'email-asc': 'Email A–Z',
  'email-desc': 'Email Z–A',
};

/** Query keys of the contacts pages, under the project's (so switching projects never mixes them). */
export const contactKeys = {
  all: (projectId: string) => [...queryKeys.project(projectId), 'contacts'] as const,
  one: (projectId: string, contactId: string) => [...queryKeys.project(projectId), 'contacts', 'one', contactId] as const,
  events: (projectId: string, contactId: string) => [...queryKeys.project(projectId), 'contacts', 'one', contactId, 'events'] as const,
  emails: (projectId: string, contactId: string) => [...queryKeys.project(projectId), 'contacts', 'one', contactId, 'emails'] as const,
  job: (projectId: string, jobId: string) => [...queryKeys.project(projectId), 'contact-jobs', jobId] as const,
};

/** A job that is still to finish: its page polls it. */
export const isRunning = (job: Pick<Job, 'status'>) => job.status === 'QUEUED' || job.status === 'RUNNING';

/** How often a running job is asked for its progress (contract 21: at least every 5 s). */
export const JOB_POLL_MS = 1_000;
