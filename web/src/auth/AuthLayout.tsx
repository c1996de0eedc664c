import type { ReactNode } from 'react';
import { Logo } from '../components/Logo';
import { PageTitle } from '../components/PageTitle';

/** The signed-out pages: one card in the middle of the page, its heading naming the page. */
export function AuthLayout({ title, children, footer }: { title: string; children: ReactNode; footer?: ReactNode }) {
  return (
    <div className="auth">
      <PageTitle parts={[title]} />
      <main className="auth-card">
        <p className="auth-brand">
          <Logo /> Mailroom
        </p>
        <h1>{title}</h1>
        {children}
      </main>
      {footer ? <div className="auth-footer">{footer}</div> : null}
    </div>
  );
}
