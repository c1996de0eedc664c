import { useId, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import type { WebhookEndpointBody } from '../../../shared/webhookEndpointSchemas';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime } from '../components/format';
import { WebhookEndpointForm, formValuesOf } from './WebhookEndpointForm';
import { WebhookSecret } from './WebhookSecret';
import { EndpointEvents, EndpointState } from './WebhookParts';
import { MESSAGES_LIVE_MS, MessageLog, messagesPending, useWebhookMessages, type MessageFilter } from './WebhookMessages';
import { endpointName, webhookEndpointQuery, webhookKeys, type WebhookEndpoint } from './webhooksApi';
import './developers.css';
import './webhooks.css';

/** One webhook endpoint: its settings and edit form, enable/disable, a test event, secret rotation, delete, and its message log. */
export function WebhookEndpointPage() {
  const { endpointId = '' } = useParams();
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<MessageFilter>('');
  const endpoint = useQuery({
    ...webhookEndpointQuery(project.id, client, endpointId),
    // Delivery may disable it meanwhile (410 Gone, or failing for days): asked again with the log
    // while messages are pending (read from the log's cache: the log's hook needs this endpoint first).
    refetchInterval: () => (messagesPending(queryClient, project.id, endpointId, status) ? MESSAGES_LIVE_MS : false),
  });
  const log = useWebhookMessages(endpointId, status, endpoint.data?.enabled ?? false);
  if (endpoint.isPending) {
    return (
      <div className="page">
        <Loading />
      </div>
    );
  }
  if (endpoint.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Webhook endpoint', project.name]} />
        <Breadcrumb />
        <h1>Webhook endpoint</h1>
        <ErrorNotice error={endpoint.error} />
      </div>
    );
  }
  return <EndpointDetail endpoint={endpoint.data} log={log} status={status} onStatusChange={setStatus} />;
}

function Breadcrumb() {
  return (
    <p className="wh-breadcrumb">
      <Link to="../.." relative="path">
        Developers
      </Link>
      <span aria-hidden="true"> / </span>
      <Link to=".." relative="path">
        Webhooks
      </Link>
    </p>
  );
}

interface EndpointDetailProps {
  endpoint: WebhookEndpoint;
  log: ReturnType<typeof useWebhookMessages>;
  status: MessageFilter;
  onStatusChange: (status: MessageFilter) => void;
}

function EndpointDetail({ endpoint, log, status, onStatusChange }: EndpointDetailProps) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const testHintId = useId();
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState<'rotate' | 'delete' | null>(null);
  const name = endpointName(endpoint);
  const path = { params: { path: { id: endpoint.id } } };

  const refreshEndpoint = () => queryClient.invalidateQueries({ queryKey: webhookKeys.all(project.id) });
  const save = useMutation({
    mutationFn: (body: Partial<WebhookEndpointBody>) => unwrap(client.PATCH('/webhook-endpoints/{id}', { ...path, body })),
    onSuccess: async (changed) => {
      queryClient.setQueryData(webhookKeys.one(project.id, endpoint.id), changed);
      setEditing(false);
      await refreshEndpoint();
    },
  });
  const toggle = useMutation({
    mutationFn: (enabled: boolean) => unwrap(client.PATCH('/webhook-endpoints/{id}', { ...path, body: { enabled } })),
    onSuccess: async (changed) => {
      queryClient.setQueryData(webhookKeys.one(project.id, endpoint.id), changed);
      await refreshEndpoint();
    },
  });
  const test = useMutation({
    mutationFn: () => unwrap(client.POST('/webhook-endpoints/{id}/test', path)),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: webhookKeys.messages(project.id, endpoint.id) }),
  });
  const rotate = useMutation({
    mutationFn: () => unwrap(client.POST('/webhook-endpoints/{id}/rotate-secret', path)),
    // Its answer is the new secret: dropped with the page, never cached.
    gcTime: 0,
    onSuccess: async () => {
      setConfirming(null);
      await queryClient.invalidateQueries({ queryKey: webhookKeys.one(project.id, endpoint.id) });
    },
    onError: () => setConfirming(null),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.DELETE('/webhook-endpoints/{id}', path)),
    onSuccess: async () => {
      setConfirming(null);
      queryClient.removeQueries({ queryKey: webhookKeys.one(project.id, endpoint.id) });
      queryClient.removeQueries({ queryKey: webhookKeys.messages(project.id, endpoint.id) });
      await queryClient.invalidateQueries({ queryKey: webhookKeys.list(project.id) });
      await navigate('..', { relative: 'path' });
    },
    onError: () => setConfirming(null),
  });
  const actionError = toggle.error ?? test.error ?? rotate.error;

  return (
    <div className="page">
      <PageTitle parts={[name, 'Webhooks', project.name]} />
      <Breadcrumb />
      <header className="page-header">
        <h1 className="wh-title">{name}</h1>
        <p className="wh-subtitle">
          <EndpointState endpoint={endpoint} withReason={false} />
          {endpoint.description ? <code className="wh-url">{endpoint.url}</code> : null}
        </p>
      </header>

      {endpoint.enabled ? null : (
        <div className="notice notice-warning wh-disabled-notice">
          <p className="notice-title">This endpoint is disabled{endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}.</p>
          <p>It receives no new messages. Enabling it sends what is still pending.</p>
        </div>
      )}

      {rotate.data ? (
        <WebhookSecret secret={rotate.data.secret} title="New signing secret">
          <div className="form-actions card-actions">
            <button type="button" className="button" onClick={() => rotate.reset()}>
              Hide the secret
            </button>
          </div>
        </WebhookSecret>
      ) : null}

      {editing ? (
        <section className="card" aria-labelledby="edit-endpoint-heading">
          <h2 id="edit-endpoint-heading">Edit endpoint</h2>
          <WebhookEndpointForm
            mode="edit"
            defaultValues={formValuesOf(endpoint)}
            submitLabel="Save changes"
            busy={save.isPending}
            error={save.error}
            onSubmit={(body) => save.mutateAsync(body)}
            onCancel={() => {
              save.reset();
              setEditing(false);
            }}
          />
        </section>
      ) : (
        <section className="card" aria-labelledby="endpoint-heading">
          <h2 id="endpoint-heading">Endpoint</h2>
          <dl className="wh-details">
            <div>
              <dt>URL</dt>
              <dd>
                <code className="wh-url">{endpoint.url}</code>
              </dd>
            </div>
            <div>
              <dt>Events</dt>
              <dd>
                <EndpointEvents events={endpoint.events} />
              </dd>
            </div>
            <div>
              <dt>Signing secret</dt>
              <dd>
                <code>{endpoint.secretHint}</code> <span className="muted">(shown whole only when created or rotated)</span>
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatDateTime(endpoint.createdAt)}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{formatDateTime(endpoint.updatedAt)}</dd>
            </div>
          </dl>
          {actionError ? <ErrorNotice error={actionError} /> : null}
          <p className="wh-status" role="status">
            {test.isSuccess ? 'Test event queued: it shows in the messages below.' : toggle.isSuccess ? (endpoint.enabled ? 'Enabled.' : 'Disabled.') : ''}
          </p>
          <div className="form-actions card-actions wh-actions">
            <button
              type="button"
              className="button button-primary"
              onClick={() => test.mutate()}
              disabled={!endpoint.enabled || test.isPending}
              aria-busy={test.isPending || undefined}
              aria-describedby={endpoint.enabled ? undefined : testHintId}
            >
              Send test event
            </button>
            <button
              type="button"
              className="button"
              onClick={() => {
                test.reset();
                toggle.mutate(!endpoint.enabled);
              }}
              disabled={toggle.isPending}
              aria-busy={toggle.isPending || undefined}
            >
              {endpoint.enabled ? 'Disable' : 'Enable'}
            </button>
            <button
              type="button"
              className="button"
              onClick={() => {
                save.reset();
                setEditing(true);
              }}
            >
              Edit
            </button>
            <button type="button" className="button" onClick={() => setConfirming('rotate')}>
              Rotate secret
            </button>
          </div>
          {endpoint.enabled ? null : (
            <p id={testHintId} className="muted wh-hint">
              A disabled endpoint gets no test event: enable it first.
            </p>
          )}
        </section>
      )}

      <MessageLog endpoint={endpoint} log={log} status={status} onStatusChange={onStatusChange} />

      <section className="card" aria-labelledby="delete-endpoint-heading">
        <h2 id="delete-endpoint-heading">Delete this endpoint</h2>
        <p className="muted">Its messages and their log go with it, and pending retries are never sent.</p>
        {remove.error ? <ErrorNotice error={remove.error} /> : null}
        <button type="button" className="button button-danger" onClick={() => setConfirming('delete')}>
          Delete endpoint
        </button>
      </section>

      <ConfirmDialog
        open={confirming === 'rotate'}
        title="Rotate the signing secret?"
        confirmLabel="Rotate secret"
        busy={rotate.isPending}
        onConfirm={() => rotate.mutate()}
        onCancel={() => setConfirming(null)}
      >
        <p>
          A new secret signs every message from now on. For 24 hours each message carries the old secret’s signature too, so your receiver keeps working while
          you deploy the new one.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirming === 'delete'}
        title={`Delete ${name}?`}
        confirmLabel="Delete endpoint"
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setConfirming(null)}
      >
        <p>The endpoint, its messages and their log are deleted, and nothing more is sent to it. This cannot be undone.</p>
      </ConfirmDialog>
    </div>
  );
}
