import { queryOptions } from '@tanstack/react-query';
import type { components } from '../../../client/mailroomClient';
import type { MailroomClient } from '../../../client/mailroomClient';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';

export type Segment = components['schemas']['Segment'];

/** The segments' query keys, under the project's, so a write invalidates exactly what it changes. */
export const segmentKeys = {
  all: (projectId: string) => [...queryKeys.project(projectId), 'segments'] as const,
  list: (projectId: string) => [...segmentKeys.all(projectId), 'list'] as const,
  one: (projectId: string, segmentId: string) => [...segmentKeys.all(projectId), 'one', segmentId] as const,
  members: (projectId: string, segmentId: string) => [...segmentKeys.all(projectId), 'members', segmentId] as const,
};

/** GET /segments: every segment of the project (the API answers them all at once). */
export const segmentsQuery = (projectId: string, client: MailroomClient) =>
  queryOptions({ queryKey: segmentKeys.list(projectId), queryFn: () => unwrap(client.GET('/segments')) });

export const segmentQuery = (projectId: string, client: MailroomClient, segmentId: string) =>
  queryOptions({
    queryKey: segmentKeys.one(projectId, segmentId),
    queryFn: () => unwrap(client.GET('/segments/{id}', { params: { path: { id: segmentId } } })),
  });

/** Segment names by id, for the `segment.<id>` filters of a condition. */
export function segmentNames(segments: Segment[] | undefined): Map<string, string> {
  return new Map((segments ?? []).map((segment) => [segment.id, segment.name]));
}
