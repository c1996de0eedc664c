import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation } from '@tanstack/react-query';
import { Link } from 'react-router';
import { emailBody } from '../../../shared/accountSchemas';
import { sessionClient, unwrap } from '../api/client';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';
import { showFieldErrors } from '../components/formErrors';
import { AuthLayout } from './AuthLayout';

/** Asks for a reset email (POST /auth/request-password-reset), which answers the same whether or not the account exists. */
export function ForgotPasswordPage() {
  const { register, handleSubmit, setError, formState } = useForm({ resolver: zodResolver(emailBody), defaultValues: { email: '' } });
  const request = useMutation({
    mutationFn: (body: { email: string }) => unwrap(sessionClient.POST('/auth/request-password-reset', { body })),
    onError: (error) => showFieldErrors(setError, error, ['email']),
  });
  const footer = (
    <p>
      Remembered it? <Link to="/login">Log in</Link>
    </p>
  );
  if (request.isSuccess) {
    return (
      <AuthLayout title="Check your email" footer={footer}>
        <p role="status">{request.data.message}. It holds a token that works once, for an hour.</p>
        <Link to="/reset-password" className="button button-primary button-wide">
          I have the token
        </Link>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout title="Reset your password" footer={footer}>
      <p className="muted">Mailroom emails you a token to choose a new password with.</p>
      <form className="form" noValidate onSubmit={(event) => void handleSubmit((body) => request.mutate(body))(event)}>
        <TextField label="Email" type="email" autoComplete="email" autoFocus error={formState.errors.email?.message} {...register('email')} />
        {request.error ? <ErrorNotice error={request.error} /> : null}
        <button type="submit" className="button button-primary button-wide" disabled={request.isPending} aria-busy={request.isPending || undefined}>
          Send reset email
        </button>
      </form>
    </AuthLayout>
  );
}
