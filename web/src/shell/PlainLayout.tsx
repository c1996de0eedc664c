import type { ReactNode } from 'react';
import { Logo } from '../components/Logo';
import { AccountMenu } from './AccountMenu';

/** The signed-in pages outside any project (creating one): the brand, the account, the page. */
export function PlainLayout({ children }: { children: ReactNode }) {
  return (
    <div className="plain">
      <header className="plain-header">
        <p className="sidebar-brand">
          <Logo /> Mailroom
        </p>
        <AccountMenu />
      </header>
      <main id="main" className="plain-content">
        {children}
      </main>
    </div>
  );
}
