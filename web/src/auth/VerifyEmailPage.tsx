import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { tokenBody } from '../../../shared/accountSchemas';
import { ApiError, sessionClient, unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { AuthLayout } from './AuthLayout';

/**
 * The page the verification email links to (/app/verify-email?token=…): it sends the token to
 * POST /auth/verify-email once and says whether the address is verified. No session is needed;
 * a signed-in account's data is refreshed, so the setup checklist shows it verified.
 */
export function VerifyEmailPage() {
  const [searchParams] = useSearchParams();
  const queryClient = useQueryClient();
  const parsed = tokenBody.safeParse({ token: searchParams.get('token') ?? '' });
  const token = parsed.success ? parsed.data.token : null;
  // A query rather than a mutation: asked once per token (a second render, or React's strict
  // mode, must not spend it twice), never again on focus or reconnect.
  const verification = useQuery({
    queryKey: ['verify-email', token],
    queryFn: async () => {
      const result = await unwrap(sessionClient.POST('/auth/verify-email', { body: { token: token! } }));
      await queryClient.invalidateQueries({ queryKey: queryKeys.session });
      return result;
    },
    enabled: token !== null,
    retry: false,
    staleTime: Infinity,
    gcTime: Infinity,
    refetchOnWindowFocus: false,
    refetchOnReconnect: false,
  });

  const continueLink = (
    <Link to="/" className="button button-primary button-wide">
      Continue to Mailroom
    </Link>
  );

  if (token === null) {
    return (
      <AuthLayout title="Verify your email">
        <div className="form">
          <div className="notice notice-error" role="alert">
            <p>This link has no verification token. Open the link from the verification email as it is, or send a new one from the dashboard.</p>
          </div>
          {continueLink}
        </div>
      </AuthLayout>
    );
  }
  if (verification.isPending) {
    return (
      <AuthLayout title="Verify your email">
        <Loading label="Verifying your email address…" />
      </AuthLayout>
    );
  }
  if (verification.isError) {
    const refused = verification.error instanceof ApiError && verification.error.status === 400;
    return (
      <AuthLayout title="Verification failed">
        <div className="form">
          <ErrorNotice error={verification.error} />
          <p className="muted">
            {refused
              ? 'A link works once and for 24 hours. Log in and send a new one from the setup checklist on the Overview page.'
              : 'Try the link again in a moment.'}
          </p>
          {continueLink}
        </div>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout title="Email verified">
      <p role="status">
        <strong>{verification.data.user.email}</strong> is verified.
      </p>
      {continueLink}
    </AuthLayout>
  );
}
