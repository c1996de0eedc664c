import { useId } from 'react';
import { useQuery } from '@tanstack/react-query';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { TYPE_LABELS, type ActivityItem } from '../activity/ActivityTable';

/** How often the stream asks for what is new. */
export const EVENTS_REFRESH_MS = 3000;

const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** An event's data, short. */
function eventData(item: ActivityItem): string {
  const data = item.metadata.eventData;
  const text = item.type === 'event.triggered' && data && typeof data === 'object' && Object.keys(data).length ? JSON.stringify(data) : '';
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

/** The event's name, or the email's subject, the campaign's or workflow's name. */
function title(item: ActivityItem): string {
  const meta = item.metadata;
  for (const key of ['eventName', 'subject', 'campaignName', 'workflowName']) {
    const value = meta[key];
    if (typeof value === 'string' && value) return value;
  }
  return '';
}

/**
 * The project's newest activity (GET /activity), asked again every few seconds: what a track or a
 * send just did shows here without a reload. A log region: screen readers hear new entries politely.
 */
export function LiveEvents() {
  const { project, client } = useCurrentProject();
  const headingId = useId();
  const feed = useQuery({
    queryKey: [...queryKeys.project(project.id), 'activity', 'live'],
    queryFn: () => unwrap(client.GET('/activity', { params: { query: { limit: '20' } } })),
    refetchInterval: EVENTS_REFRESH_MS,
  });

  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-header">
        <h2 id={headingId}>Live events</h2>
        <p className="muted">
          <span className="live-dot" aria-hidden="true" /> Every {EVENTS_REFRESH_MS / 1000} s
        </p>
      </div>
      {feed.isPending ? (
        <Loading />
      ) : feed.isError ? (
        <ErrorNotice error={feed.error} />
      ) : (
        <div role="log" aria-labelledby={headingId} aria-live="polite">
          <ol className="event-stream">
            {feed.data.data.length === 0 ? (
              <li className="empty">Nothing yet: track an event or send an email, and it shows here within seconds.</li>
            ) : (
              feed.data.data.map((item) => (
                <li key={`${item.type}-${item.id}`} className="event-entry">
                  <time dateTime={item.timestamp} className="event-time">
                    {timeOnly.format(new Date(item.timestamp))}
                  </time>
                  <span className={item.type === 'event.triggered' ? 'badge badge-event' : 'badge'}>
                    {item.type === 'event.triggered' ? 'Event' : TYPE_LABELS[item.type]}
                  </span>
                  <span className="event-title">{title(item)}</span>
                  <span className="event-contact">{item.contactEmail ?? ''}</span>
                  {eventData(item) ? <code className="event-data">{eventData(item)}</code> : null}
                </li>
              ))
            )}
          </ol>
        </div>
      )}
    </section>
  );
}
