import { useState, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { NavLink, useLocation } from 'react-router';
import { configQuery, type ProjectMembership } from '../api/queries';
import { Logo } from '../components/Logo';
import { AccountMenu } from './AccountMenu';
import { ProjectSwitcher } from './ProjectSwitcher';
import { NAV_ITEMS } from './navigation';

/**
 * The signed-in layout: the sidebar (project, main navigation, account) and the page. On a narrow
 * screen the sidebar is a bar above the page, and the navigation and account fold behind a "Menu"
 * button (closed again when a page opens), so the page starts near the top.
 */
export function AppShell({ projects, current, children }: { projects: ProjectMembership[]; current: ProjectMembership; children: ReactNode }) {
  const config = useQuery(configQuery);
  const items = NAV_ITEMS.filter((item) => !item.shownWhen || (config.data ? item.shownWhen(config.data) : false));
  // Open only on the page it was opened on: following a link closes it.
  const { pathname } = useLocation();
  const [openOn, setOpenOn] = useState<string | null>(null);
  const menuOpen = openOn === pathname;
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className={menuOpen ? 'sidebar sidebar-open' : 'sidebar'}>
        <div className="sidebar-top">
          <p className="sidebar-brand">
            <Logo /> Mailroom
          </p>
          <button
            type="button"
            className="button button-small menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="sidebar-menu"
            onClick={() => setOpenOn(menuOpen ? null : pathname)}
          >
            Menu
          </button>
        </div>
        <ProjectSwitcher projects={projects} current={current} />
        <div id="sidebar-menu" className="sidebar-menu">
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
        </div>
      </aside>
      <main id="main" className="content" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
