import { createContext, useContext } from 'react';
import type { MailroomClient } from '../../../client/mailroomClient';
import type { ProjectMembership } from '../api/queries';

export interface CurrentProject {
  project: ProjectMembership;
  /** The typed client with this project's `X-Project-Id`, for the project-scoped routes. */
  client: MailroomClient;
}

export const CurrentProjectContext = createContext<CurrentProject | null>(null);

/** The project the page is in (the `:projectId` of its path), for pages under ProjectLayout. */
export function useCurrentProject(): CurrentProject {
  const current = useContext(CurrentProjectContext);
  if (!current) throw new Error('useCurrentProject() is for pages under /projects/:projectId');
  return current;
}
