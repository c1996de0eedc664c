import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { addMemberBody, memberRoles, projectPatchBody } from '../../../shared/projectSchemas';
import { sessionClient, unwrap } from '../api/client';
import { meQuery, queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { TextField } from '../components/TextField';
import { SelectField } from '../components/SelectField';
import { ErrorNotice } from '../components/ErrorNotice';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { showFieldErrors } from '../components/formErrors';
import { formatDateTime } from '../components/format';
import { UsageCaps } from './UsageCaps';
import { BillingCard } from './BillingCard';
import './settings.css';

type MemberRole = (typeof memberRoles)[number];

const ROLE_OPTIONS = memberRoles.map((role) => ({ value: role, label: role.charAt(0) + role.slice(1).toLowerCase() }));

/** The project's name, its members with their roles, billing with Stripe on, and this month's usage against its caps (contract 17). */
export function SettingsPage() {
  const { project } = useCurrentProject();
  const manages = project.role === 'OWNER' || project.role === 'ADMIN';
  return (
    <div className="page settings-page">
      <PageTitle parts={['Settings', project.name]} />
      <header className="page-header">
        <h1>Settings</h1>
        <p className="muted">{project.name}</p>
      </header>
      <ProjectNameForm key={project.id} manages={manages} />
      <Members manages={manages} />
      <BillingCard manages={manages} />
      <UsageCaps manages={manages} />
    </div>
  );
}

function ProjectNameForm({ manages }: { manages: boolean }) {
  const { project } = useCurrentProject();
  const queryClient = useQueryClient();
  const { register, handleSubmit, setError, formState, reset } = useForm({ resolver: zodResolver(projectPatchBody), defaultValues: { name: project.name } });
  const save = useMutation({
    mutationFn: (body: { name?: string }) => unwrap(sessionClient.PATCH('/users/@me/projects/{id}', { params: { path: { id: project.id } }, body })),
    onSuccess: async (saved) => {
      reset({ name: saved.name });
      await queryClient.invalidateQueries({ queryKey: queryKeys.projects });
    },
    onError: (error) => showFieldErrors(setError, error, ['name']),
  });
  return (
    <section className="card" aria-labelledby="project-heading">
      <h2 id="project-heading">Project</h2>
      <form className="form form-inline" noValidate onSubmit={(event) => void handleSubmit((body) => save.mutate({ name: body.name }))(event)}>
        <TextField label="Name" autoComplete="off" disabled={!manages} error={formState.errors.name?.message} {...register('name')} />
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={!manages || save.isPending} aria-busy={save.isPending || undefined}>
            Save
          </button>
          <span role="status" className="muted">
            {save.isSuccess && !formState.isDirty ? 'Saved' : ''}
          </span>
        </div>
        {save.error ? <ErrorNotice error={save.error} /> : null}
        {manages ? null : <p className="muted">Only the project’s owners and admins can rename it.</p>}
      </form>
    </section>
  );
}

function Members({ manages }: { manages: boolean }) {
  const { project } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const me = useQuery(meQuery);
  const [removing, setRemoving] = useState<{ userId: string; email: string } | null>(null);
  const membersKey = [...queryKeys.project(project.id), 'members'];
  const members = useQuery({
    queryKey: membersKey,
    queryFn: () => unwrap(sessionClient.GET('/projects/{id}/members', { params: { path: { id: project.id } } })),
  });
  const changeRole = useMutation({
    mutationFn: ({ userId, role }: { userId: string; role: MemberRole }) =>
      unwrap(sessionClient.PATCH('/projects/{id}/members/{userId}', { params: { path: { id: project.id, userId } }, body: { role } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: membersKey }),
  });
  const remove = useMutation({
    mutationFn: (userId: string) => unwrap(sessionClient.DELETE('/projects/{id}/members/{userId}', { params: { path: { id: project.id, userId } } })),
    onSuccess: async (_data, userId) => {
      setRemoving(null);
      if (userId === me.data?.id) {
        // Left the project: it is no longer one of ours.
        await navigate('/', { replace: true });
        await queryClient.invalidateQueries({ queryKey: queryKeys.projects });
        return;
      }
      await queryClient.invalidateQueries({ queryKey: membersKey });
    },
  });

  return (
    <section className="card" aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      {members.isPending ? (
        <Loading />
      ) : members.isError ? (
        <ErrorNotice error={members.error} />
      ) : (
        <div className="table-wrap" role="region" aria-labelledby="members-heading" tabIndex={0}>
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data.map((member) => {
                const isMe = member.userId === me.data?.id;
                return (
                  <tr key={member.userId}>
                    <td>
                      {member.email}
                      {isMe ? <span className="muted"> (you)</span> : null}
                    </td>
                    <td>
                      {manages ? (
                        <select
                          aria-label={`Role of ${member.email}`}
                          value={member.role}
                          disabled={changeRole.isPending}
                          onChange={(event) => changeRole.mutate({ userId: member.userId, role: event.target.value as MemberRole })}
                        >
                          {ROLE_OPTIONS.map((option) => (
                            <option key={option.value} value={option.value}>
                              {option.label}
                            </option>
                          ))}
                        </select>
                      ) : (
                        ROLE_OPTIONS.find((option) => option.value === member.role)?.label
                      )}
                    </td>
                    <td className="nowrap">{formatDateTime(member.createdAt)}</td>
                    <td className="cell-actions">
                      {isMe ? (
                        <button type="button" className="button button-small" onClick={() => setRemoving(member)}>
                          Leave project
                        </button>
                      ) : manages ? (
                        <button type="button" className="button button-small" aria-label={`Remove ${member.email}`} onClick={() => setRemoving(member)}>
                          Remove
                        </button>
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {changeRole.error ? <ErrorNotice error={changeRole.error} /> : null}
      {remove.error ? <ErrorNotice error={remove.error} /> : null}
      <ConfirmDialog
        open={removing !== null}
        title={removing?.userId === me.data?.id ? `Leave ${project.name}?` : `Remove ${removing?.email ?? ''}?`}
        confirmLabel={removing?.userId === me.data?.id ? 'Leave project' : 'Remove member'}
        busy={remove.isPending}
        onConfirm={() => removing && remove.mutate(removing.userId)}
        onCancel={() => setRemoving(null)}
      >
        <p>
          {removing?.userId === me.data?.id
            ? 'You lose access to its contacts, campaigns and keys at once; an owner or admin can add you again.'
            : 'They lose access to this project at once; their Mailroom account stays.'}
        </p>
      </ConfirmDialog>
      {manages ? <AddMemberForm onAdded={() => queryClient.invalidateQueries({ queryKey: membersKey })} /> : null}
    </section>
  );
}

function AddMemberForm({ onAdded }: { onAdded: () => Promise<void> }) {
  const { project } = useCurrentProject();
  const { register, handleSubmit, setError, formState, reset } = useForm({
    resolver: zodResolver(addMemberBody),
    defaultValues: { email: '', role: 'MEMBER' as MemberRole },
  });
  const add = useMutation({
    mutationFn: (body: { email: string; role: MemberRole }) =>
      unwrap(sessionClient.POST('/projects/{id}/members', { params: { path: { id: project.id } }, body })),
    onSuccess: async () => {
      reset();
      await onAdded();
    },
    onError: (error) => showFieldErrors(setError, error, ['email', 'role']),
  });
  return (
    <form className="form add-member" noValidate onSubmit={(event) => void handleSubmit((body) => add.mutate(body))(event)}>
      <h3>Add a member</h3>
      <p className="muted">They need a Mailroom account on this instance first.</p>
      <div className="form-row">
        <TextField label="Email" type="email" autoComplete="off" error={formState.errors.email?.message} {...register('email')} />
        <SelectField label="Role" options={ROLE_OPTIONS} error={formState.errors.role?.message} {...register('role')} />
        <button type="submit" className="button button-primary" disabled={add.isPending} aria-busy={add.isPending || undefined}>
          Add member
        </button>
      </div>
      {add.error ? <ErrorNotice error={add.error} /> : null}
    </form>
  );
}
