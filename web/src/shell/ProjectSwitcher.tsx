import { useId } from 'react';
import { Link, useLocation, useNavigate } from 'react-router';
import type { ProjectMembership } from '../api/queries';

/** The control named "Project" (contract 21): shows the current project and opens another at the same page. */
export function ProjectSwitcher({ projects, current }: { projects: ProjectMembership[]; current: ProjectMembership }) {
  const id = useId();
  const navigate = useNavigate();
  const location = useLocation();
  // The same page in the other project (its list, not one record of this project).
  const section = location.pathname.slice(`/projects/${current.id}`.length).split('/')[1] ?? '';
  return (
    <div className="project-switcher">
      <label htmlFor={id}>Project</label>
      <select id={id} value={current.id} onChange={(event) => void navigate(`/projects/${event.target.value}${section ? `/${section}` : ''}`)}>
        {projects.map((project) => (
          <option key={project.id} value={project.id}>
            {project.name}
          </option>
        ))}
      </select>
      <Link to="/projects/new" className="project-new">
        New project
      </Link>
    </div>
  );
}
