import { useEffect, useMemo } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link, Outlet, useParams } from 'react-router';
import { projectClient } from '../api/client';
import { projectsQuery } from '../api/queries';
import { Loading } from '../components/Loading';
import { ErrorNotice } from '../components/ErrorNotice';
import { AppShell } from '../shell/AppShell';
import { CurrentProjectContext } from './currentProject';
import { rememberProject } from './lastProject';

/** /projects/:projectId/…: the app shell around the project's pages, which find the project through useCurrentProject(). */
export function ProjectLayout() {
  const { projectId = '' } = useParams();
  const projects = useQuery(projectsQuery);
  const project = projects.data?.find((p) => p.id === projectId);
  const current = useMemo(() => (project ? { project, client: projectClient(project.id) } : null), [project]);
  useEffect(() => {
    if (project) rememberProject(project.id);
  }, [project]);

  if (projects.isPending) {
    return (
      <main className="page-center">
        <Loading />
      </main>
    );
  }
  if (projects.isError) {
    return (
      <main className="page-center">
        <h1>Your projects could not be loaded</h1>
        <ErrorNotice error={projects.error} />
      </main>
    );
  }
  if (!current) {
    return (
      <main className="page-center">
        <h1>Project not found</h1>
        <p>This project does not exist, or you are not one of its members.</p>
        <Link to="/">Open your projects</Link>
      </main>
    );
  }
  return (
    <CurrentProjectContext.Provider value={current}>
      <AppShell projects={projects.data} current={current.project}>
        <Outlet />
      </AppShell>
    </CurrentProjectContext.Provider>
  );
}
