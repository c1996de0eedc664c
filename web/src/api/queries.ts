import { queryOptions, type QueryClient } from '@tanstack/react-query';
import type { components } from '../../../client/mailroomClient';
import { sessionClient, unwrap } from './client';

export type User = components['schemas']['User'];
export type ProjectMembership = components['schemas']['ProjectMembership'];
export type CreatedProject = components['schemas']['CreatedProject'];
export type InstanceConfig = components['schemas']['InstanceConfig'];
export type SetupState = components['schemas']['ProjectSetupState'];

/**
 * Query keys: everything of the signed-in account under `session` (cleared at log-out), everything
 * of one project under `['project', id]`, so a write can invalidate exactly what it changes.
 */
export const queryKeys = {
  config: ['config'] as const,
  session: ['session'] as const,
  me: ['session', 'me'] as const,
  projects: ['session', 'projects'] as const,
  project: (projectId: string) => ['project', projectId] as const,
  setupState: (projectId: string) => ['project', projectId, 'setup-state'] as const,
};

/** Drops everything an earlier session loaded (its account, its projects' data); the instance's config stays. */
export function forgetSessionData(queryClient: QueryClient): void {
  queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== queryKeys.config[0] });
}

/** GET /config: what this instance has (sign-ups, SMTP or the local outbox, …). Changes only with a restart. */
export const configQuery = queryOptions({
  queryKey: queryKeys.config,
  queryFn: () => unwrap(sessionClient.GET('/config')),
  staleTime: Infinity,
});

/** The signed-in user; a 401 means no session. */
export const meQuery = queryOptions({
  queryKey: queryKeys.me,
  queryFn: () => unwrap(sessionClient.GET('/users/@me')),
});

/** The user's projects, oldest membership first. Never holds a secret key (the API sends only its hint). */
export const projectsQuery = queryOptions({
  queryKey: queryKeys.projects,
  queryFn: () => unwrap(sessionClient.GET('/users/@me/projects')),
});

export const setupStateQuery = (projectId: string) =>
  queryOptions({
    queryKey: queryKeys.setupState(projectId),
    queryFn: () => unwrap(sessionClient.GET('/projects/{id}/setup-state', { params: { path: { id: projectId } } })),
  });
