import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime } from '../components/format';
import { AttachmentList, MessageView, formatBytes } from '../emails/MessageView';
import '../emails/emails.css';

/**
 * One message the local outbox caught (GET /outbox/:id), viewable as Mailpit shows mail: rendered
 * HTML (the untracked preview, GET /outbox/:id/preview: looking is not opening), text, raw source
 * and header fields, and its attachments.
 */
export function OutboxMessagePage() {
  const { project, client } = useCurrentProject();
  const messageId = useParams().messageId ?? '';
  const messageKey = [...queryKeys.project(project.id), 'outbox', 'one', messageId];
  const message = useQuery({
    queryKey: messageKey,
    queryFn: () => unwrap(client.GET('/outbox/{id}', { params: { path: { id: messageId } } })),
  });
  const preview = useQuery({
    queryKey: [...messageKey, 'preview'],
    queryFn: () => unwrap(client.GET('/outbox/{id}/preview', { params: { path: { id: messageId } } })),
  });

  if (message.isPending || message.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Outbox', project.name]} />
        {message.isPending ? (
          <Loading />
        ) : (
          <>
            <Link className="back-link" to="..">
              ← Outbox
            </Link>
            <h1>Caught message</h1>
            <ErrorNotice error={message.error} />
          </>
        )}
      </div>
    );
  }

  const m = message.data;
  const subject = m.subject || '(no subject)';
  // Mailroom names each email's message `<emailId@domain>`: the record it was caught for.
  const emailId = /^<([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})@/i.exec(m.messageId)?.[1];
  return (
    <div className="page">
      <PageTitle parts={[subject, 'Outbox', project.name]} />
      <header className="page-header">
        <Link className="back-link" to="..">
          ← Outbox
        </Link>
        <div className="title-row">
          <h1>{subject}</h1>
        </div>
        <p className="muted">
          Caught {formatDateTime(m.createdAt)} instead of sent.
          {emailId ? (
            <>
              {' '}
              <Link to={`../../emails/${emailId}`} relative="path">
                Open its email record
              </Link>
            </>
          ) : null}
        </p>
      </header>
      <section className="card" aria-labelledby="outbox-details">
        <h2 id="outbox-details">Details</h2>
        <dl className="details">
          <Detail term="From" address value={m.from} />
          <Detail term="To" address value={m.to.join(', ')} />
          <Detail term="Caught" value={formatDateTime(m.createdAt)} />
          <Detail term="Size" value={formatBytes(m.size)} />
          <Detail term="Message-ID" wide value={<code>{m.messageId}</code>} />
        </dl>
      </section>
      <section className="card" aria-labelledby="outbox-message">
        <h2 id="outbox-message">Message</h2>
        <MessageView
          title="Message content"
          preview={{ isPending: preview.isPending, error: preview.error, data: preview.data }}
          raw={{
            queryKey: [...messageKey, 'raw'],
            load: () => unwrap(client.GET('/outbox/{id}/raw', { params: { path: { id: messageId } }, parseAs: 'blob' })),
          }}
          headers={m.headers}
          fileName={`${m.id}.eml`}
          tracked
        />
      </section>
      {m.attachments.length > 0 ? (
        <section className="card" aria-labelledby="outbox-attachments">
          <h2 id="outbox-attachments">Attachments</h2>
          <AttachmentList
            attachments={m.attachments}
            download={(index) =>
              unwrap(client.GET('/outbox/{id}/attachments/{index}', { params: { path: { id: messageId, index: String(index) } }, parseAs: 'blob' }))
            }
          />
        </section>
      ) : null}
    </div>
  );
}

/** One fact of the details list; `wide` takes a whole row, `address` a whole row on narrow screens. */
function Detail({ term, value, wide = false, address = false }: { term: string; value: ReactNode; wide?: boolean; address?: boolean }) {
  return (
    <div className={wide ? 'detail-wide' : address ? 'detail-address' : undefined}>
      <dt>{term}</dt>
      <dd>{value}</dd>
    </div>
  );
}
