import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { projectBody } from '../../../shared/projectSchemas';
import { sessionClient, unwrap } from '../api/client';
import { projectsQuery, queryKeys } from '../api/queries';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';
import { showFieldErrors } from '../components/formErrors';
import { PlainLayout } from '../shell/PlainLayout';
import { NewKeys } from './NewKeys';
import { PageTitle } from '../components/PageTitle';

/** Create a project, then see its keys once (the secret key is never shown again, nor kept by the dashboard). */
export function NewProjectPage() {
  const queryClient = useQueryClient();
  const projects = useQuery(projectsQuery);
  const { register, handleSubmit, setError, formState } = useForm({ resolver: zodResolver(projectBody), defaultValues: { name: '' } });
  const create = useMutation({
    mutationFn: (body: { name: string }) => unwrap(sessionClient.POST('/users/@me/projects', { body })),
    // The answer holds the secret key: kept only while this page shows it, not in any cache after.
    gcTime: 0,
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.projects }),
    onError: (error) => showFieldErrors(setError, error, ['name']),
  });

  if (create.data) {
    const { id, name, publicKey, secretKey } = create.data;
    return (
      <PlainLayout>
        <div className="narrow">
          <PageTitle parts={['API keys', name]} />
          <h1>{name}</h1>
          <p className="lead">Your project is ready. These are its API keys.</p>
          <NewKeys publicKey={publicKey} secretKey={secretKey} />
          <Link to={`/projects/${id}`} className="button button-primary">
            Continue to {name}
          </Link>
        </div>
      </PlainLayout>
    );
  }

  const hasProjects = (projects.data?.length ?? 0) > 0;
  return (
    <PlainLayout>
      <div className="narrow">
        <PageTitle parts={['Create a project']} />
        <h1>Create a project</h1>
        <p className="lead">
          A project holds its own contacts, templates, campaigns and workflows, and has its own API keys. One per product or environment is a good start.
        </p>
        <form className="form card" noValidate onSubmit={(event) => void handleSubmit((body) => create.mutate(body))(event)}>
          <TextField label="Name" autoComplete="off" autoFocus placeholder="Newsletter" error={formState.errors.name?.message} {...register('name')} />
          {create.error ? <ErrorNotice error={create.error} /> : null}
          <div className="form-actions">
            <button type="submit" className="button button-primary" disabled={create.isPending} aria-busy={create.isPending || undefined}>
              Create project
            </button>
            {hasProjects ? (
              <Link to="/" className="button button-quiet">
                Cancel
              </Link>
            ) : null}
          </div>
        </form>
      </div>
    </PlainLayout>
  );
}
