import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { resetBody } from '../../../shared/accountSchemas';
import { sessionClient, unwrap } from '../api/client';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';
import { showFieldErrors } from '../components/formErrors';
import { AuthLayout } from './AuthLayout';

/** A new password with the token of the reset email (POST /auth/reset-password); every session of the account ends. */
export function ResetPasswordPage() {
  const [searchParams] = useSearchParams();
  // The reset mail's link carries the token: then only the new password is asked for.
  const linkToken = searchParams.get('token');
  const { register, handleSubmit, setError, formState } = useForm({
    resolver: zodResolver(resetBody),
    defaultValues: { token: linkToken ?? '', password: '' },
  });
  const reset = useMutation({
    mutationFn: (body: { token: string; password: string }) => unwrap(sessionClient.POST('/auth/reset-password', { body })),
    onError: (error) => showFieldErrors(setError, error, ['token', 'password']),
  });
  if (reset.isSuccess) {
    return (
      <AuthLayout title="Password changed">
        <p role="status">Your password is changed, and every session of your account has ended.</p>
        <Link to="/login" className="button button-primary button-wide">
          Log in
        </Link>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout
      title="Choose a new password"
      footer={
        <p>
          {linkToken ? 'Link expired or used?' : 'No token?'} <Link to="/forgot-password">Send a reset email</Link>
        </p>
      }
    >
      <form className="form" noValidate onSubmit={(event) => void handleSubmit((body) => reset.mutate(body))(event)}>
        {linkToken && !formState.errors.token ? (
          <input type="hidden" {...register('token')} />
        ) : (
          <TextField label="Token" autoComplete="one-time-code" hint="From the reset email." error={formState.errors.token?.message} {...register('token')} />
        )}
        <TextField
          label="New password"
          type="password"
          autoComplete="new-password"
          hint="At least 8 characters."
          error={formState.errors.password?.message}
          {...register('password')}
        />
        {reset.error ? <ErrorNotice error={reset.error} /> : null}
        <button type="submit" className="button button-primary button-wide" disabled={reset.isPending} aria-busy={reset.isPending || undefined}>
          Change password
        </button>
      </form>
    </AuthLayout>
  );
}
