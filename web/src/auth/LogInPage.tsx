import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { loginBody } from '../../../shared/accountSchemas';
import { sessionClient, unwrap } from '../api/client';
import { configQuery, forgetSessionData, queryKeys } from '../api/queries';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';
import { showFieldErrors } from '../components/formErrors';
import { AuthLayout } from './AuthLayout';
import { nextPath } from './nextPath';

export function LogInPage() {
  const navigate = useNavigate();
  const [searchParams] = useSearchParams();
  const queryClient = useQueryClient();
  const config = useQuery(configQuery);
  const { register, handleSubmit, setError, formState } = useForm({ resolver: zodResolver(loginBody), defaultValues: { email: '', password: '' } });
  const logIn = useMutation({
    mutationFn: (body: { email: string; password: string }) => unwrap(sessionClient.POST('/auth/login', { body })),
    onSuccess: async ({ user }) => {
      // Whatever an earlier session left in the cache is not this user's.
      forgetSessionData(queryClient);
      queryClient.setQueryData(queryKeys.me, user);
      await navigate(nextPath(searchParams.get('next')), { replace: true });
    },
    onError: (error) => showFieldErrors(setError, error, ['email', 'password']),
  });

  const signupsEnabled = config.data?.signups.enabled ?? true;
  return (
    <AuthLayout
      title="Log in"
      footer={
        signupsEnabled ? (
          <p>
            New to this Mailroom? <Link to="/signup">Sign up</Link>
          </p>
        ) : null
      }
    >
      <form className="form" noValidate onSubmit={(event) => void handleSubmit((body) => logIn.mutate(body))(event)}>
        <TextField label="Email" type="email" autoComplete="email" autoFocus error={formState.errors.email?.message} {...register('email')} />
        <TextField label="Password" type="password" autoComplete="current-password" error={formState.errors.password?.message} {...register('password')} />
        <p className="form-aside">
          <Link to="/forgot-password">Forgot your password?</Link>
        </p>
        {logIn.error ? <ErrorNotice error={logIn.error} /> : null}
        <button type="submit" className="button button-primary button-wide" disabled={logIn.isPending} aria-busy={logIn.isPending || undefined}>
          Log in
        </button>
      </form>
    </AuthLayout>
  );
}
