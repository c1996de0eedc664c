import { useState } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useLocation, useNavigate, useParams } from 'react-router';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime } from '../components/format';
import { ContactForm, type ContactBody } from './ContactForm';
import { contactKeys, type Contact, type ContactEvent, type Email } from './contactsApi';
import { displayValue, rowsFromData } from './dataFields';
import { mergeTimeline } from './timeline';
import './contacts.css';

const TIMELINE_PAGE = 25;

/** /contacts/:contactId: one contact, its data, its events and emails as one timeline; edit and delete. */
export function ContactPage() {
  const { project, client } = useCurrentProject();
  const { contactId = '' } = useParams();
  const base = `/projects/${project.id}/contacts`;
  const contact = useQuery({
    queryKey: contactKeys.one(project.id, contactId),
    queryFn: () => unwrap(client.GET('/contacts/{id}', { params: { path: { id: contactId } } })),
  });
  return (
    <div className="page">
      <PageTitle parts={[contact.data?.email ?? 'Contact', 'Contacts', project.name]} />
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to={base}>Contacts</Link>
      </nav>
      {contact.isPending ? (
        <Loading label="Loading the contact…" />
      ) : contact.isError ? (
        <>
          <h1>Contact</h1>
          <ErrorNotice error={contact.error} />
          <p>
            <Link to={base}>Back to the contacts</Link>
          </p>
        </>
      ) : (
        <ContactDetail contact={contact.data} />
      )}
    </div>
  );
}

function ContactDetail({ contact }: { contact: Contact }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const location = useLocation();
  const arrivedWith = (location.state as { notice?: string } | null)?.notice;
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const base = `/projects/${project.id}/contacts`;

  const save = useMutation({
    mutationFn: (body: ContactBody) => unwrap(client.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body })),
    onSuccess: async (updated) => {
      queryClient.setQueryData(contactKeys.one(project.id, contact.id), updated);
      setEditing(false);
      setSaved(true);
      // The list, and this contact's timeline (a subscription change records an event).
      await queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) });
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.DELETE('/contacts/{id}', { params: { path: { id: contact.id } } })),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: contactKeys.one(project.id, contact.id) });
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) }),
        queryClient.invalidateQueries({ queryKey: queryKeys.setupState(project.id) }),
      ]);
      await navigate(base, { replace: true });
    },
  });

  const dataEntries = Object.entries(contact.data);
  return (
    <>
      <header className="page-header page-header-actions">
        <div>
          <h1 className="contact-title">{contact.email}</h1>
          <p className="muted contact-meta">
            <span className={contact.subscribed ? 'badge badge-success' : 'badge'}>{contact.subscribed ? 'Subscribed' : 'Unsubscribed'}</span>
            <span>Created {formatDateTime(contact.createdAt)}</span>
            <span>Updated {formatDateTime(contact.updatedAt)}</span>
          </p>
        </div>
        <div className="header-actions">
          {editing ? null : (
            <button
              type="button"
              className="button"
              onClick={() => {
                save.reset();
                setSaved(false);
                setEditing(true);
              }}
            >
              Edit contact
            </button>
          )}
          <button type="button" className="button button-danger-quiet" onClick={() => setDeleting(true)}>
            Delete contact
          </button>
        </div>
      </header>

      <div role="status" className="status-line">
        {saved ? (
          <p className="notice notice-success">Saved.</p>
        ) : arrivedWith === 'created' ? (
          <p className="notice notice-success">Contact created.</p>
        ) : arrivedWith === 'merged' ? (
          <p className="notice">A contact with this address existed already: what you entered was saved on it.</p>
        ) : null}
      </div>

      {editing ? (
        <section className="card" aria-labelledby="edit-heading">
          <h2 id="edit-heading">Edit contact</h2>
          <ContactForm
            defaultValues={{ email: contact.email, subscribed: contact.subscribed, data: rowsFromData(contact.data) }}
            original={contact.data}
            submitLabel="Save contact"
            busy={save.isPending}
            error={save.error}
            onSubmit={(body) => save.mutate(body)}
            onCancel={() => setEditing(false)}
          />
        </section>
      ) : (
        <section className="card" aria-labelledby="data-heading">
          <h2 id="data-heading">Data</h2>
          {dataEntries.length === 0 ? (
            <p className="empty">No data fields. Edit the contact to add some, or send them with POST /v1/track.</p>
          ) : (
            <dl className="data-list">
              {dataEntries.map(([key, value]) => (
                <div key={key}>
                  <dt>{key}</dt>
                  <dd>{displayValue(value)}</dd>
                </div>
              ))}
            </dl>
          )}
        </section>
      )}

      <ContactTimeline contact={contact} />

      <ConfirmDialog
        open={deleting}
        title={`Delete ${contact.email}?`}
        confirmLabel="Delete contact"
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setDeleting(false)}
      >
        <p>
          Its data, its events and its email history, its segment memberships and its workflow runs are deleted with it. This cannot be undone; mail or a track
          call to {contact.email} later creates a new contact.
        </p>
        {remove.error ? <ErrorNotice error={remove.error} /> : null}
      </ConfirmDialog>
    </>
  );
}

type TimelineItem = { kind: 'event'; at: string; event: ContactEvent } | { kind: 'email'; at: string; email: Email };

const EMAIL_STATUS: Record<Email['status'], string> = {
  QUEUED: 'Queued',
  SENDING: 'Sending',
  SENT: 'Sent',
  DELIVERED: 'Delivered',
  OPENED: 'Opened',
  CLICKED: 'Clicked',
  BOUNCED: 'Bounced',
  COMPLAINED: 'Complained',
  FAILED: 'Failed',
  SUPPRESSED: 'Suppressed',
  RECEIVED: 'Received',
};
const EMAIL_SOURCE: Record<Email['source'], string> = { TRANSACTIONAL: 'Transactional', CAMPAIGN: 'Campaign', WORKFLOW: 'Workflow', INBOUND: 'Received' };

/** The contact's events (GET /events/contact/:id) and emails (GET /emails?contactId=) as one list, newest first. */
function ContactTimeline({ contact }: { contact: Contact }) {
  const { project, client } = useCurrentProject();
  const events = useInfiniteQuery({
    queryKey: contactKeys.events(project.id, contact.id),
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/events/contact/{contactId}', {
          params: { path: { contactId: contact.id }, query: { limit: TIMELINE_PAGE, ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
  });
  const emails = useInfiniteQuery({
    queryKey: contactKeys.emails(project.id, contact.id),
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/emails', {
          params: { query: { contactId: contact.id, limit: String(TIMELINE_PAGE), ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
  });

  const eventItems: TimelineItem[] =
    events.data?.pages.flatMap((page) => page.data.map((event) => ({ kind: 'event' as const, at: event.createdAt, event }))) ?? [];
  const emailItems: TimelineItem[] =
    emails.data?.pages.flatMap((page) => page.data.map((email) => ({ kind: 'email' as const, at: email.createdAt, email }))) ?? [];
  const timeline = mergeTimeline(
    [
      { items: eventItems, hasMore: events.hasNextPage },
      { items: emailItems, hasMore: emails.hasNextPage },
    ],
    (item) => item.at,
  );
  const loadingMore = events.isFetchingNextPage || emails.isFetchingNextPage;
  const loadMore = () => {
    if (timeline.loadNext.includes(0)) void events.fetchNextPage();
    if (timeline.loadNext.includes(1)) void emails.fetchNextPage();
  };

  return (
    <section className="card" aria-labelledby="timeline-heading">
      <h2 id="timeline-heading">Timeline</h2>
      <p className="muted">Its events and the emails sent to it or received from it, newest first.</p>
      {events.isPending || emails.isPending ? (
        <Loading label="Loading the timeline…" />
      ) : events.isError || emails.isError ? (
        <ErrorNotice error={events.error ?? emails.error} />
      ) : timeline.items.length === 0 ? (
        <p className="empty">Nothing yet: no event was recorded for this contact and no email was sent to it.</p>
      ) : (
        <ol className="timeline">
          {timeline.items.map((item) =>
            item.kind === 'event' ? <EventEntry key={`e-${item.event.id}`} event={item.event} /> : <EmailEntry key={`m-${item.email.id}`} email={item.email} />,
          )}
        </ol>
      )}
      {timeline.loadNext.length > 0 && !events.isError && !emails.isError ? (
        <div className="card-actions">
          <button type="button" className="button" onClick={loadMore} disabled={loadingMore} aria-busy={loadingMore || undefined}>
            Load more
          </button>
        </div>
      ) : null}
    </section>
  );
}

function EventEntry({ event }: { event: ContactEvent }) {
  const data = event.data ? Object.entries(event.data) : [];
  return (
    <li className="timeline-item timeline-event">
      <span className="timeline-kind">{event.source === 'SYSTEM' ? 'Mailroom' : 'Event'}</span>
      <div className="timeline-body">
        <p className="timeline-title">
          <code>{event.name}</code>
        </p>
        {data.length > 0 ? (
          <p className="timeline-detail">
            {data.map(([key, value]) => (
              <span key={key} className="timeline-pair">
                {key}: {displayValue(value)}
              </span>
            ))}
          </p>
        ) : null}
      </div>
      <time className="timeline-time" dateTime={event.createdAt}>
        {formatDateTime(event.createdAt)}
      </time>
    </li>
  );
}

function EmailEntry({ email }: { email: Email }) {
  const { project } = useCurrentProject();
  const bad = email.status === 'BOUNCED' || email.status === 'COMPLAINED' || email.status === 'FAILED' || email.status === 'SUPPRESSED';
  const inbound = email.source === 'INBOUND';
  return (
    <li className="timeline-item timeline-email">
      <span className="timeline-kind timeline-kind-email">Email</span>
      <div className="timeline-body">
        <p className="timeline-title">
          <Link to={`/projects/${project.id}/emails/${email.id}`}>{email.subject || '(no subject)'}</Link>
        </p>
        <p className="timeline-detail">
          <span className={bad ? 'badge badge-danger' : email.status === 'QUEUED' || email.status === 'SENDING' ? 'badge' : 'badge badge-success'}>
            {EMAIL_STATUS[email.status]}
          </span>
          <span>{inbound ? `From ${email.from}` : `${EMAIL_SOURCE[email.source]}, from ${email.from}`}</span>
          {email.opens > 0 ? <span>{`Opened ${email.opens} time${email.opens === 1 ? '' : 's'}`}</span> : null}
          {email.clicks > 0 ? <span>{`${email.clicks} click${email.clicks === 1 ? '' : 's'}`}</span> : null}
          {email.error ? <span>{email.error}</span> : null}
        </p>
      </div>
      <time className="timeline-time" dateTime={email.createdAt}>
        {formatDateTime(email.createdAt)}
      </time>
    </li>
  );
}
