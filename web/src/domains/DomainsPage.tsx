import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { components } from '../../../client/mailroomClient';
import { unwrap } from '../api/client';
import { configQuery, queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { TextField } from '../components/TextField';
import { CopyButton } from '../components/CopyButton';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { showFieldErrors } from '../components/formErrors';
import { formatDateTime } from '../components/format';

type Domain = components['schemas']['Domain'];

const STATUS_LABELS: Record<Domain['status'], string> = { VERIFIED: 'Verified', PENDING: 'Pending', FAILED: 'Failed' };

/** The project's sender domains: add one, the DNS records to publish (with copy buttons), check now, remove. */
export function DomainsPage() {
  const { project, client } = useCurrentProject();
  const config = useQuery(configQuery);
  const domainsKey = [...queryKeys.project(project.id), 'domains'];
  const domains = useQuery({
    queryKey: domainsKey,
    queryFn: () => unwrap(client.GET('/domains/project/{projectId}', { params: { path: { projectId: project.id } } })),
  });
  return (
    <div className="page">
      <PageTitle parts={['Domains', project.name]} />
      <header className="page-header">
        <h1>Domains</h1>
        <p className="muted">Mail is sent only from addresses at a verified domain: publish its DNS records, then check.</p>
      </header>
      {config.data?.localOutbox.senderDomain ? (
        <div className="notice">
          <p>
            No SMTP relay is configured, so mail stays in the local outbox, and any project may send from <code>{config.data.localOutbox.senderDomain}</code>{' '}
            without adding it.
          </p>
        </div>
      ) : null}
      <AddDomainForm domainsKey={domainsKey} />
      {domains.isPending ? (
        <Loading />
      ) : domains.isError ? (
        <ErrorNotice error={domains.error} />
      ) : domains.data.length === 0 ? (
        <p className="empty">No domains yet. Add the domain your mail is sent from.</p>
      ) : (
        domains.data.map((domain) => <DomainCard key={domain.id} domain={domain} domainsKey={domainsKey} />)
      )}
    </div>
  );
}

function AddDomainForm({ domainsKey }: { domainsKey: readonly unknown[] }) {
  const { client } = useCurrentProject();
  const queryClient = useQueryClient();
  // Checked by the API (its domain-name rules live on the server): its 422 is shown on the field.
  const { register, handleSubmit, setError, formState, reset } = useForm({ defaultValues: { domain: '' } });
  const add = useMutation({
    mutationFn: (body: { domain: string }) => unwrap(client.POST('/domains', { body })),
    onSuccess: async () => {
      reset();
      await queryClient.invalidateQueries({ queryKey: domainsKey });
    },
    onError: (error) => showFieldErrors(setError, error, ['domain']),
  });
  return (
    <section className="card" aria-labelledby="add-domain-heading">
      <h2 id="add-domain-heading">Add a domain</h2>
      <form className="form" noValidate onSubmit={(event) => void handleSubmit((body) => add.mutate(body))(event)}>
        <div className="form-row">
          <TextField label="Domain" autoComplete="off" placeholder="example.com" error={formState.errors.domain?.message} {...register('domain')} />
          <button type="submit" className="button button-primary" disabled={add.isPending} aria-busy={add.isPending || undefined}>
            Add domain
          </button>
        </div>
        {add.error && !formState.errors.domain ? <ErrorNotice error={add.error} /> : null}
      </form>
    </section>
  );
}

function DomainCard({ domain, domainsKey }: { domain: Domain; domainsKey: readonly unknown[] }) {
  const { client } = useCurrentProject();
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const headingId = `domain-${domain.id}`;
  const check = useMutation({
    mutationFn: () => unwrap(client.GET('/domains/{id}/verify', { params: { path: { id: domain.id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: domainsKey }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.DELETE('/domains/{id}', { params: { path: { id: domain.id } } })),
    onSuccess: async () => {
      setConfirming(false);
      await queryClient.invalidateQueries({ queryKey: domainsKey });
    },
  });
  const dnsUnavailable = check.data?.check.status === 'DNS_UNAVAILABLE';
  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-header">
        <h2 id={headingId}>{domain.domain}</h2>
        <span className={domain.verified ? 'badge badge-success' : 'badge'}>{STATUS_LABELS[domain.status]}</span>
      </div>
      <p className="muted">{domain.lastCheckedAt ? `Last checked ${formatDateTime(domain.lastCheckedAt)}` : 'Not checked yet'}</p>
      <div className="table-wrap" role="region" aria-label={`DNS records of ${domain.domain}`} tabIndex={0}>
        <table className="table dns-records">
          <thead>
            <tr>
              <th scope="col">Purpose</th>
              <th scope="col">Type</th>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
              <th scope="col">Found</th>
            </tr>
          </thead>
          <tbody>
            {domain.records.map((record) => (
              <tr key={`${record.purpose}-${record.name}`}>
                <td>{record.purpose.replace('_', ' ')}</td>
                <td>{record.type}</td>
                <td>
                  <code className="dns-value">{record.name}</code>
                  <CopyButton value={record.name} what={`${record.purpose} name`} />
                </td>
                <td>
                  <code className="dns-value">{record.value}</code>
                  <CopyButton value={record.value} what={`${record.purpose} value`} />
                </td>
                <td>{record.verified ? 'Yes' : 'No'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {dnsUnavailable ? (
        <div className="notice notice-warning" role="status">
          <p>
            DNS could not be reached just now{check.data?.check.message ? ` (${check.data.check.message})` : ''}: nothing was checked. Try again in a moment.
          </p>
        </div>
      ) : null}
      {check.error ? <ErrorNotice error={check.error} /> : null}
      {remove.error ? <ErrorNotice error={remove.error} /> : null}
      <div className="form-actions card-actions">
        <button type="button" className="button" onClick={() => check.mutate()} disabled={check.isPending} aria-busy={check.isPending || undefined}>
          Check now
        </button>
        <button type="button" className="button button-quiet" aria-label={`Remove ${domain.domain}`} onClick={() => setConfirming(true)}>
          Remove
        </button>
      </div>
      <ConfirmDialog
        open={confirming}
        title={`Remove ${domain.domain}?`}
        confirmLabel="Remove domain"
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setConfirming(false)}
      >
        <p>Mail from addresses at {domain.domain} is refused from then on, until the domain is added and verified again.</p>
      </ConfirmDialog>
    </section>
  );
}
