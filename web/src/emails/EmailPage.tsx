import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { components } from '../../../client/mailroomClient';
import type { SystemEventName } from '../../../shared/eventNames';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { SOURCE_LABELS, STATUS_LABELS, statusBadgeClass } from './emailLabels';
import { AttachmentList, MessageView } from './MessageView';
import './emails.css';

type EmailDetail = components['schemas']['EmailDetail'];
type EmailEvent = EmailDetail['events'][number];

/**
 * The events of an email's story in words (their names stay shown: they are what webhooks and
 * automations use). Keyed by the shared names, so an `email.` name Mailroom comes to record cannot
 * go without words.
 */
const EVENT_LABELS: Record<Extract<SystemEventName, `email.${string}`>, string> = {
  'email.sent': 'Sent',
  'email.delivered': 'Delivered',
  'email.opened': 'Opened',
  'email.clicked': 'Clicked',
  'email.bounced': 'Bounced',
  'email.complained': 'Complained',
  'email.failed': 'Failed',
  'email.received': 'Received',
};

/** Any other name an email's events may carry is shown as it is. */
const eventLabel = (name: string): string => (EVENT_LABELS as Partial<Record<string, string>>)[name] ?? name;

const VERDICTS = ['spf', 'dkim', 'dmarc'] as const;
const VERDICT_LABELS: Record<(typeof VERDICTS)[number], string> = { spf: 'SPF', dkim: 'DKIM', dmarc: 'DMARC' };

/**
 * One email (GET /emails/:id): what it is, its story (its events, newest first), and the message
 * itself as HTML (the untracked preview: looking is not opening), text and raw source; for a
 * received email its SPF/DKIM/DMARC verdicts and attachments.
 */
export function EmailPage() {
  const { project, client } = useCurrentProject();
  const emailId = useParams().emailId ?? '';
  const emailKey = [...queryKeys.project(project.id), 'emails', 'one', emailId];
  const email = useQuery({
    queryKey: emailKey,
    queryFn: () => unwrap(client.GET('/emails/{id}', { params: { path: { id: emailId } } })),
  });
  const preview = useQuery({
    queryKey: [...emailKey, 'preview'],
    queryFn: () => unwrap(client.GET('/emails/{id}/preview', { params: { path: { id: emailId } } })),
  });

  if (email.isPending) {
    return (
      <div className="page">
        <PageTitle parts={['Email', project.name]} />
        <Loading />
      </div>
    );
  }
  if (email.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Email', project.name]} />
        <Link className="back-link" to="..">
          ← Emails
        </Link>
        <h1>Email</h1>
        <ErrorNotice error={email.error} />
      </div>
    );
  }

  const record = email.data;
  const subject = record.subject || '(no subject)';
  const inbound = record.source === 'INBOUND';
  const events = [...record.events].reverse();
  return (
    <div className="page">
      <PageTitle parts={[subject, 'Emails', project.name]} />
      <header className="page-header">
        <Link className="back-link" to="..">
          ← Emails
        </Link>
        <div className="title-row">
          <h1>{subject}</h1>
          <span className={statusBadgeClass(record.status)}>{STATUS_LABELS[record.status]}</span>
        </div>
        <p className="muted">
          {inbound ? 'Received' : SOURCE_LABELS[record.source]} · {formatDateTime(record.createdAt)}
        </p>
      </header>

      {record.error ? (
        <div className="notice notice-warning">
          <p className="notice-title">{inbound ? 'Note' : record.status === 'SUPPRESSED' ? 'Why it was not sent' : 'What the relay said'}</p>
          <p>{record.error}</p>
        </div>
      ) : null}

      <section className="card" aria-labelledby="email-details">
        <h2 id="email-details">Details</h2>
        <dl className="details">
          <Detail term="From" address value={record.from} />
          <Detail term="To" address value={record.to} />
          <Detail term="Status" value={STATUS_LABELS[record.status]} />
          <Detail term="Source" value={SOURCE_LABELS[record.source]} />
          <Detail term="Created" value={formatDateTime(record.createdAt)} />
          {inbound ? null : (
            <>
              <Detail term="Sent" value={when(record.sentAt)} />
              <Detail term="Delivered" value={when(record.deliveredAt)} />
              <Detail term="First opened" value={when(record.openedAt)} />
              <Detail term="First clicked" value={when(record.clickedAt)} />
              {record.bouncedAt ? <Detail term="Bounced" value={when(record.bouncedAt)} /> : null}
              <Detail term="Opens" value={formatNumber(record.opens)} />
              <Detail term="Clicks" value={formatNumber(record.clicks)} />
            </>
          )}
          <Detail term="Message-ID" wide value={<code>{record.messageId}</code>} />
        </dl>
      </section>

      {inbound ? (
        <section className="card" aria-labelledby="email-authentication">
          <h2 id="email-authentication">Authentication</h2>
          {record.auth ? (
            <dl className="verdicts">
              {VERDICTS.map((name) => (
                <div key={name}>
                  <dt>{VERDICT_LABELS[name]}</dt>
                  <dd>
                    <span className={verdictClass(record.auth![name])}>{record.auth![name]}</span>
                  </dd>
                </div>
              ))}
            </dl>
          ) : (
            <p className="empty">No verdicts were recorded for this message.</p>
          )}
        </section>
      ) : null}

      <section className="card" aria-labelledby="email-message">
        <h2 id="email-message">Message</h2>
        {inbound && record.html === null && record.text === null ? (
          <p className="empty">The message’s content is no longer kept (retention removed it); the record stays.</p>
        ) : (
          <MessageView
            title="Email content"
            preview={{ isPending: preview.isPending, error: preview.error, data: preview.data }}
            raw={{
              queryKey: [...emailKey, 'raw'],
              load: () => unwrap(client.GET('/emails/{id}/raw', { params: { path: { id: emailId } }, parseAs: 'blob' })),
            }}
            headers={record.headers}
            fileName={`${record.id}.eml`}
            tracked={!inbound}
            remoteImagesSrc={`/emails/${encodeURIComponent(emailId)}/preview.html?projectId=${encodeURIComponent(project.id)}`}
          />
        )}
      </section>

      {inbound ? (
        <section className="card" aria-labelledby="email-attachments">
          <h2 id="email-attachments">Attachments</h2>
          <AttachmentList
            attachments={record.attachments ?? []}
            download={(index) =>
              unwrap(client.GET('/emails/{id}/attachments/{index}', { params: { path: { id: emailId, index: String(index) } }, parseAs: 'blob' }))
            }
          />
        </section>
      ) : null}

      <section className="card" aria-labelledby="email-story">
        <h2 id="email-story">Story</h2>
        {events.length === 0 ? (
          <p className="empty">Nothing has happened to this email yet.</p>
        ) : (
          <ol className="story" aria-label="Events, newest first">
            {events.map((event, index) => (
              <li key={index}>
                <span className="story-event">
                  {eventLabel(event.name)}
                  <code>{event.name}</code>
                </span>
                <span className="muted">{formatDateTime(event.createdAt)}</span>
                {eventDetail(event) ? <span className="story-detail">{eventDetail(event)}</span> : null}
              </li>
            ))}
          </ol>
        )}
      </section>
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

function when(value: string | null): string {
  return value ? formatDateTime(value) : '—';
}

function verdictClass(verdict: string): string {
  return verdict === 'pass' ? 'badge badge-success' : verdict === 'fail' || verdict === 'softfail' || verdict === 'permerror' ? 'badge badge-danger' : 'badge';
}

/** What an event's data says that its name does not: the link clicked, the reason of a bounce. */
function eventDetail(event: EmailEvent): string | null {
  const data = event.data;
  if (typeof data !== 'object' || data === null) return null;
  const fields = data as Record<string, unknown>;
  for (const key of ['url', 'reason', 'error', 'diagnosticCode', 'bounceType']) {
    const value = fields[key];
    if (typeof value === 'string' && value) return key === 'url' ? `Link: ${value}` : value;
  }
  return null;
}
