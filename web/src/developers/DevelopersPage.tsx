import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { sessionClient, unwrap } from '../api/client';
import { configQuery, queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { NewKeys } from '../projects/NewKeys';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { ErrorNotice } from '../components/ErrorNotice';
import { PageTitle } from '../components/PageTitle';
import { sendSnippets, trackSnippets } from './snippets';
import { SnippetTabs } from './SnippetTabs';
import { SmtpRelay } from './SmtpRelay';
import { RecentRequests } from './RecentRequests';
import { LiveEvents } from './LiveEvents';
import { WebhooksCard } from './WebhooksCard';
import './developers.css';

/**
 * What a developer needs to call the API from their code: the keys, examples that work as shown
 * (curl, @plunk/node, the browser, the SMTP relay), and what their calls did: the recent API
 * requests with status and duration, and the live stream of events; the way to the Webhooks page.
 */
export function DevelopersPage() {
  const { project } = useCurrentProject();
  const queryClient = useQueryClient();
  const config = useQuery(configQuery);
  const [confirming, setConfirming] = useState(false);
  const regenerate = useMutation({
    mutationFn: () => unwrap(sessionClient.POST('/users/@me/projects/{id}/regenerate-keys', { params: { path: { id: project.id } } })),
    // Holds the new secret key: dropped with the page, never cached.
    gcTime: 0,
    onSuccess: () => {
      setConfirming(false);
      return queryClient.invalidateQueries({ queryKey: queryKeys.projects });
    },
  });
  const mayRegenerate = project.role === 'OWNER' || project.role === 'ADMIN';
  const send = sendSnippets(config.data);
  const track = trackSnippets(regenerate.data?.publicKey ?? project.publicKey);

  return (
    <div className="page">
      <PageTitle parts={['Developers', project.name]} />
      <header className="page-header">
        <h1>Developers</h1>
        <p className="muted">Keys and examples for calling the Mailroom API from your code.</p>
      </header>

      {regenerate.data ? (
        <NewKeys publicKey={regenerate.data.publicKey} secretKey={regenerate.data.secretKey} />
      ) : (
        <section className="card" aria-labelledby="keys-heading">
          <h2 id="keys-heading">API keys</h2>
          <dl className="key-list">
            <div>
              <dt>Public key</dt>
              <dd>
                <code className="key">{project.publicKey}</code>
                <CopyButton value={project.publicKey} what="public key" />
              </dd>
              <dd className="key-use">Safe in a browser: it can only track events (POST /v1/track).</dd>
            </div>
            <div>
              <dt>Secret key</dt>
              <dd>
                <code className="key">{project.secretKeyHint}</code>
              </dd>
              <dd className="key-use">
                Shown once, when the project was made or its keys regenerated; Mailroom keeps only its last characters. Keep it on your servers.
              </dd>
            </div>
          </dl>
          {regenerate.error ? <ErrorNotice error={regenerate.error} /> : null}
          <div className="form-actions card-actions">
            <button type="button" className="button" onClick={() => setConfirming(true)} disabled={!mayRegenerate}>
              Regenerate keys
            </button>
            {mayRegenerate ? null : <p className="muted">Only the project’s owners and admins can regenerate its keys.</p>}
          </div>
        </section>
      )}

      <div className="developers-examples">
        <section className="card" aria-labelledby="send-heading">
          <h2 id="send-heading">Send an email</h2>
          <p className="muted">
            From your server, with the secret key in <code>MAILROOM_SECRET_KEY</code>.
            {config.data?.localOutbox.enabled
              ? ' This instance has no SMTP relay configured: mail stays in its local outbox, and any project may send from the outbox domain.'
              : ' The sender’s domain must be one of the project’s verified domains.'}
          </p>
          <SnippetTabs name="Send examples" snippets={send} />
        </section>

        <section className="card" aria-labelledby="track-heading">
          <h2 id="track-heading">Track an event</h2>
          <p className="muted">With the public key, from a web page too: it creates or updates the contact and can start workflows.</p>
          <SnippetTabs name="Track examples" snippets={track} />
        </section>
      </div>

      <WebhooksCard />

      <RecentRequests />

      <div className="developers-pair">
        <LiveEvents />
        <SmtpRelay config={config.data} />
      </div>

      <p className="muted">
        Every route is described in the <a href="/docs">API reference</a> (OpenAPI at <a href="/openapi.json">/openapi.json</a>).
      </p>

      <ConfirmDialog
        open={confirming}
        title="Regenerate the keys?"
        confirmLabel="Regenerate keys"
        busy={regenerate.isPending}
        onConfirm={() => regenerate.mutate()}
        onCancel={() => setConfirming(false)}
      >
        <p>
          New public and secret keys replace the current ones at once. Every server and page still using the current keys is refused until it has the new ones.
        </p>
      </ConfirmDialog>
    </div>
  );
}
