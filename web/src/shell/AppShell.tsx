import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { NavLink } from 'react-router';
import { configQuery, type ProjectMembership } from '../api/queries';
import { Logo } from '../components/Logo';
import { AccountMenu } from './AccountMenu';
import { ProjectSwitcher } from './ProjectSwitcher';
import { NAV_ITEMS } from './navigation';

/** The signed-in layout: the sidebar (project, main navigation, account) and the page. */
export function AppShell({ projects, current, children }: { projects: ProjectMembership[]; current: ProjectMembership; children: ReactNode }) {
  const config = useQuery(configQuery);
  const items = NAV_ITEMS.filter((item) => !item.shownWhen || (config.data ? item.shownWhen(config.data) : false));
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className="sidebar">
        <p className="sidebar-brand">
          <Logo /> Mailroom
        </p>
        <ProjectSwitcher projects={projects} current={current} />
        <nav aria-label="Main" className="main-nav">
          <ul>
            {items.map((item) => (
              <li key={item.label}>
                <NavLink to={`/projects/${current.id}${item.to ? `/${item.to}` : ''}`} end={item.to === ''}>
                  {item.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <AccountMenu />
      </aside>
      <main id="main" className="content" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
