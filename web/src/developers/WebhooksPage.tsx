import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { WEBHOOK_ENDPOINT_LIMITS, type WebhookEndpointBody } from '../../../shared/webhookEndpointSchemas';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime } from '../components/format';
import { SnippetTabs } from './SnippetTabs';
import { WebhookEndpointForm, formValuesOf } from './WebhookEndpointForm';
import { WebhookSecret } from './WebhookSecret';
import { EndpointEvents, EndpointState } from './WebhookParts';
import { VERIFY_SNIPPETS } from './webhookSnippets';
import { endpointName, webhookEndpointsQuery, webhookKeys, type WebhookEndpoint } from './webhooksApi';
import './developers.css';
import './webhooks.css';

/**
 * The project's outbound webhook endpoints (contract 18): the list with each one's events and
 * state, "New endpoint", the secret shown once after creation, and how a receiver verifies.
 */
export function WebhooksPage() {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const endpoints = useQuery(webhookEndpointsQuery(project.id, client));
  const [creating, setCreating] = useState(false);
  const create = useMutation({
    mutationFn: (body: WebhookEndpointBody) => unwrap(client.POST('/webhook-endpoints', { body })),
    // Its answer holds the secret: dropped with the page, never put in the query cache.
    gcTime: 0,
    onSuccess: () => {
      setCreating(false);
      return queryClient.invalidateQueries({ queryKey: webhookKeys.list(project.id) });
    },
  });
  const created = create.data;
  const count = endpoints.data?.data.length ?? 0;
  const full = count >= WEBHOOK_ENDPOINT_LIMITS.perProject;

  return (
    <div className="page">
      <PageTitle parts={['Webhooks', 'Developers', project.name]} />
      <p className="wh-breadcrumb">
        <Link to=".." relative="path">
          Developers
        </Link>
      </p>
      <header className="page-header wh-header">
        <div>
          <h1>Webhooks</h1>
          <p className="muted">
            Mailroom POSTs your project’s events (deliveries, bounces, opens, clicks, unsubscribes, segment changes, tracked events) to these URLs, signed as
            Standard Webhooks, and retries for about 37 hours until they answer 2xx.
          </p>
        </div>
        {creating ? null : (
          <button
            type="button"
            className="button button-primary"
            onClick={() => {
              create.reset();
              setCreating(true);
            }}
            disabled={full}
          >
            New endpoint
          </button>
        )}
      </header>

      {creating ? (
        <section className="card" aria-labelledby="new-endpoint-heading">
          <h2 id="new-endpoint-heading">New endpoint</h2>
          <WebhookEndpointForm
            mode="create"
            defaultValues={formValuesOf()}
            submitLabel="Create endpoint"
            busy={create.isPending}
            error={create.error}
            onSubmit={(body) => create.mutateAsync(body)}
            onCancel={() => {
              create.reset();
              setCreating(false);
            }}
          />
        </section>
      ) : null}

      {created ? (
        <WebhookSecret secret={created.secret} title={`Endpoint created: ${endpointName(created)}`}>
          <div className="form-actions card-actions">
            <Link className="button" to={created.id}>
              Open the endpoint
            </Link>
            <button type="button" className="button button-quiet" onClick={() => create.reset()}>
              Hide the secret
            </button>
          </div>
        </WebhookSecret>
      ) : null}

      <section className="card" aria-labelledby="endpoints-heading">
        <div className="card-header">
          <h2 id="endpoints-heading">Endpoints</h2>
          {endpoints.data ? (
            <p className="muted">
              {count} of {WEBHOOK_ENDPOINT_LIMITS.perProject}
            </p>
          ) : null}
        </div>
        {endpoints.isPending ? (
          <Loading />
        ) : endpoints.isError ? (
          <ErrorNotice error={endpoints.error} />
        ) : count === 0 ? (
          <p className="empty">No endpoints yet. Add one with “New endpoint”: Mailroom then sends it every event its patterns match.</p>
        ) : (
          <div className="table-wrap wh-table-wrap" role="region" aria-labelledby="endpoints-heading" tabIndex={0}>
            <table className="table wh-table">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="wh-wide-only">
                    Created
                  </th>
                </tr>
              </thead>
              <tbody>
                {endpoints.data.data.map((endpoint) => (
                  <EndpointRow key={endpoint.id} endpoint={endpoint} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        {full ? <p className="muted card-actions">A project has at most {WEBHOOK_ENDPOINT_LIMITS.perProject} endpoints: delete one to add another.</p> : null}
      </section>

      <section className="card" aria-labelledby="verify-heading">
        <h2 id="verify-heading">Verify the messages</h2>
        <p className="muted">
          Each message carries <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> headers. Check the signature over the
          raw body with the endpoint’s secret before trusting it, and deduplicate on <code>webhook-id</code>: a message may arrive twice.
        </p>
        <SnippetTabs name="Verification examples" snippets={VERIFY_SNIPPETS} />
      </section>
    </div>
  );
}

function EndpointRow({ endpoint }: { endpoint: WebhookEndpoint }) {
  return (
    <tr>
      <td className="wh-url-cell">
        <Link to={endpoint.id}>{endpoint.url}</Link>
        {endpoint.description ? <span className="wh-description">{endpoint.description}</span> : null}
      </td>
      <td>
        <EndpointEvents events={endpoint.events} />
      </td>
      <td>
        <EndpointState endpoint={endpoint} />
      </td>
      <td className="nowrap wh-wide-only">{formatDateTime(endpoint.createdAt)}</td>
    </tr>
  );
}
