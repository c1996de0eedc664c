import { useQuery } from '@tanstack/react-query';
import { meQuery } from '../api/queries';
import { useLogOut } from '../auth/useLogOut';

/** Who is signed in, and the control named "Log out" (contract 21). */
export function AccountMenu() {
  const me = useQuery(meQuery);
  const logOut = useLogOut();
  return (
    <div className="account">
      {me.data ? (
        <p className="account-email" title={me.data.email}>
          {me.data.email}
        </p>
      ) : null}
      <button type="button" className="button button-small" onClick={() => logOut.mutate()} disabled={logOut.isPending}>
        Log out
      </button>
      {logOut.isError ? (
        <p className="field-error" role="alert">
          {logOut.error.message}
        </p>
      ) : null}
    </div>
  );
}
