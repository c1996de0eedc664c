import { useQuery } from '@tanstack/react-query';
import { Navigate, Outlet, useLocation } from 'react-router';
import { ApiError } from '../api/client';
import { meQuery } from '../api/queries';
import { Loading } from '../components/Loading';
import { ErrorNotice } from '../components/ErrorNotice';
import { logInPathFor } from './nextPath';

/** The pages behind the log-in: without a session (GET /users/@me answers 401) the user is sent to log in, and back here afterwards. */
export function RequireSession() {
  const me = useQuery(meQuery);
  const location = useLocation();
  if (me.isPending) {
    return (
      <main className="page-center">
        <Loading />
      </main>
    );
  }
  if (me.isError) {
    if (me.error instanceof ApiError && me.error.status === 401) return <Navigate to={logInPathFor(location.pathname + location.search)} replace />;
    return (
      <main className="page-center">
        <h1>Mailroom is not answering</h1>
        <ErrorNotice error={me.error} />
        <button type="button" className="button" onClick={() => void me.refetch()}>
          Try again
        </button>
      </main>
    );
  }
  return <Outlet />;
}
