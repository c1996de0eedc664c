import { Link } from 'react-router';
import { PageTitle } from './components/PageTitle';

/** A path the dashboard has no page for (a feature not built yet answers this too). */
export function NotFoundPage({ inShell = false }: { inShell?: boolean }) {
  const body = (
    <>
      <PageTitle parts={['Page not found']} />
      <h1>Page not found</h1>
      <p>There is no page at this address.</p>
      <Link to="/">Go to your projects</Link>
    </>
  );
  return inShell ? <div className="page">{body}</div> : <main className="page-center">{body}</main>;
}
