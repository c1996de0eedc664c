import { useQuery } from '@tanstack/react-query';
import { Navigate } from 'react-router';
import { projectsQuery } from '../api/queries';
import { Loading } from '../components/Loading';
import { ErrorNotice } from '../components/ErrorNotice';
import { lastProjectId } from './lastProject';

/** /app/: the project opened last (or the first), or, for an account with none, the page that creates one. */
export function HomeRedirect() {
  const projects = useQuery(projectsQuery);
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
  if (projects.data.length === 0) return <Navigate to="/projects/new" replace />;
  const last = lastProjectId();
  const project = projects.data.find((p) => p.id === last) ?? projects.data[0];
  return <Navigate to={`/projects/${project.id}`} replace />;
}
