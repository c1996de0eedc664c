import { isRouteErrorResponse, useRouteError } from 'react-router';
import { NotFoundPage } from './NotFoundPage';

/**
 * What the router shows when a page cannot be loaded or throws. The usual cause is a page's
 * script gone after an upgrade while this tab kept the old page: reloading fetches the new one.
 */
export function RouteError() {
  const error = useRouteError();
  if (isRouteErrorResponse(error) && error.status === 404) return <NotFoundPage />;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <main className="page-center">
      <h1>This page could not be shown</h1>
      <div className="notice notice-error" role="alert">
        <p>{message}</p>
      </div>
      <p>If Mailroom was just upgraded, reloading the page fetches the new version.</p>
      <button type="button" className="button button-primary" onClick={() => window.location.reload()}>
        Reload
      </button>
    </main>
  );
}
