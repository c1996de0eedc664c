import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { unwrap } from '../api/client';
import { configQuery, queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime } from '../components/format';
import { formatBytes } from '../emails/MessageView';
import '../emails/emails.css';
import { LoadMore } from '../components/LoadMore';

/**
 * The local outbox (contract 9; in the navigation while SMTP_URL is unset): the mail the project
 * would have sent, newest first (GET /outbox), each message opening as HTML, text and raw source.
 * Refreshed every 5 s, so a message sent meanwhile appears without a reload.
 */
export function OutboxPage() {
  const { project, client } = useCurrentProject();
  const config = useQuery(configQuery);
  const messages = useInfiniteQuery({
    queryKey: [...queryKeys.project(project.id), 'outbox'],
    queryFn: ({ pageParam }) => unwrap(client.GET('/outbox', { params: { query: { limit: 50, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
    refetchInterval: 5000,
  });
  const items = messages.data?.pages.flatMap((page) => page.data) ?? [];
  const senderDomain = config.data?.localOutbox.senderDomain;

  return (
    <div className="page">
      <PageTitle parts={['Outbox', project.name]} />
      <header className="page-header">
        <h1>Outbox</h1>
        <p className="muted">
          No SMTP relay is configured (<code>SMTP_URL</code> is unset), so the mail this project sends is caught here instead of delivered.
          {senderDomain ? (
            <>
              {' '}
              Any address at <code>{senderDomain}</code> may send.
            </>
          ) : null}
        </p>
      </header>
      <section className="card" aria-labelledby="outbox-heading">
        <h2 id="outbox-heading" className="visually-hidden">
          Caught messages
        </h2>
        {messages.isPending ? (
          <Loading />
        ) : messages.isError ? (
          <ErrorNotice error={messages.error} />
        ) : items.length === 0 ? (
          <p className="empty">The outbox is empty: mail sent with POST /v1/send, campaigns and workflows appears here.</p>
        ) : (
          <div className="table-wrap" role="region" aria-labelledby="outbox-heading" tabIndex={0}>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Caught</th>
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                  <th scope="col">Subject</th>
                  <th scope="col">Size</th>
                </tr>
              </thead>
              <tbody>
                {items.map((message) => (
                  <tr key={message.id}>
                    <td className="nowrap">{formatDateTime(message.createdAt)}</td>
                    <td>{message.from}</td>
                    <td>{message.to.join(', ')}</td>
                    <td className="truncate">
                      <Link to={message.id}>{message.subject || '(no subject)'}</Link>
                    </td>
                    <td className="nowrap">{formatBytes(message.size)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <LoadMore query={messages} />
      </section>
    </div>
  );
}
