import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { credentials } from '../../../shared/accountSchemas';
import { sessionClient, unwrap } from '../api/client';
import { configQuery, forgetSessionData, queryKeys } from '../api/queries';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { showFieldErrors } from '../components/formErrors';
import { AuthLayout } from './AuthLayout';

export function SignUpPage() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const config = useQuery(configQuery);
  const { register, handleSubmit, setError, formState } = useForm({ resolver: zodResolver(credentials), defaultValues: { email: '', password: '' } });
  const signUp = useMutation({
    mutationFn: (body: { email: string; password: string }) => unwrap(sessionClient.POST('/auth/signup', { body })),
    onSuccess: async ({ user }) => {
      forgetSessionData(queryClient);
      queryClient.setQueryData(queryKeys.me, user);
      // A new account has no project yet: making one is the first step.
      await navigate('/projects/new', { replace: true });
    },
    onError: (error) => showFieldErrors(setError, error, ['email', 'password']),
  });

  const footer = (
    <p>
      Already have an account? <Link to="/login">Log in</Link>
    </p>
  );
  if (config.isPending) {
    return (
      <AuthLayout title="Sign up" footer={footer}>
        <Loading />
      </AuthLayout>
    );
  }
  if (config.data && !config.data.signups.enabled) {
    return (
      <AuthLayout title="Sign up" footer={footer}>
        <p>Sign-ups are turned off on this Mailroom. Ask the person who runs it to add you to a project.</p>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout title="Sign up" footer={footer}>
      <form className="form" noValidate onSubmit={(event) => void handleSubmit((body) => signUp.mutate(body))(event)}>
        <TextField label="Email" type="email" autoComplete="email" autoFocus error={formState.errors.email?.message} {...register('email')} />
        <TextField
          label="Password"
          type="password"
          autoComplete="new-password"
          hint="At least 8 characters."
          error={formState.errors.password?.message}
          {...register('password')}
        />
        {signUp.error ? <ErrorNotice error={signUp.error} /> : null}
        <button type="submit" className="button button-primary button-wide" disabled={signUp.isPending} aria-busy={signUp.isPending || undefined}>
          Sign up
        </button>
      </form>
    </AuthLayout>
  );
}
