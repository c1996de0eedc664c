import { useId, useState, type FormEvent } from 'react';
import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import type { components } from '../../../client/mailroomClient';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { LoadMore } from '../components/LoadMore';

type LoggedRequest = components['schemas']['LoggedRequest'];

const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
type StatusClass = (typeof STATUS_CLASSES)[number];

/** Whose requests: the keys' (an integration's), the dashboard's, or both. */
const MADE_WITH = {
  keys: { label: 'API keys', auth: 'secret,public' },
  session: { label: 'The dashboard', auth: 'session' },
  any: { label: 'Anything', auth: undefined },
} as const;
type MadeWith = keyof typeof MADE_WITH;

const AUTH_LABELS: Record<LoggedRequest['auth'], string> = { secret: 'Secret key', public: 'Public key', session: 'Dashboard' };

/** How often the list is asked again while the page is open. */
export const REQUESTS_REFRESH_MS = 5000;

function statusBadge(status: number): string {
  if (status >= 500) return 'badge badge-danger';
  if (status >= 400) return 'badge badge-warning';
  return 'badge badge-success';
}

/** To the second: requests come many a minute. */
const requestTime = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });

function formatDuration(ms: number): string {
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms).toLocaleString()} ms`;
}

/** The project's recent API requests (GET /requests), refreshed every few seconds, filtered by status class, origin and path. */
export function RecentRequests() {
  const { project, client } = useCurrentProject();
  const [status, setStatus] = useState<StatusClass | ''>('');
  const [madeWith, setMadeWith] = useState<MadeWith>('keys');
  const [path, setPath] = useState('');
  const ids = { heading: useId(), status: useId(), madeWith: useId(), path: useId() };
  const auth = MADE_WITH[madeWith].auth;

  const requests = useInfiniteQuery({
    queryKey: [...queryKeys.project(project.id), 'requests', { status, auth, path }],
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/requests', {
          params: {
            query: {
              limit: '25',
              ...(status ? { status } : {}),
              ...(auth ? { auth } : {}),
              ...(path ? { path } : {}),
              ...(pageParam ? { cursor: pageParam } : {}),
            },
          },
        }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
    refetchInterval: REQUESTS_REFRESH_MS,
    // A filter changed: the rows shown stay until the new ones arrive (no flash of "Loading").
    placeholderData: keepPreviousData,
  });
  const items = requests.data?.pages.flatMap((page) => page.data) ?? [];
  const filtered = Boolean(status || path || madeWith !== 'keys');

  function search(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = new FormData(event.currentTarget).get('path');
    const trimmed = typeof value === 'string' ? value.trim() : '';
    setPath(trimmed && !trimmed.startsWith('/') ? `/${trimmed}` : trimmed);
  }

  return (
    <section className="card" aria-labelledby={ids.heading}>
      <div className="card-header">
        <h2 id={ids.heading}>Recent API requests</h2>
        <p className="muted">Refreshed every {REQUESTS_REFRESH_MS / 1000} s</p>
      </div>
      <div className="filters requests-filters">
        <form role="search" className="filter-search" onSubmit={search}>
          <label htmlFor={ids.path}>Path</label>
          <input id={ids.path} name="path" type="search" placeholder="/v1/ or /contacts/:id" defaultValue={path} key={path} />
          <button type="submit" className="button">
            Search
          </button>
        </form>
        <div className="field field-inline">
          <label htmlFor={ids.status}>Status</label>
          <select id={ids.status} value={status} onChange={(event) => setStatus(event.target.value as StatusClass | '')}>
            <option value="">Any</option>
            {STATUS_CLASSES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </div>
        <div className="field field-inline">
          <label htmlFor={ids.madeWith}>Made with</label>
          <select id={ids.madeWith} value={madeWith} onChange={(event) => setMadeWith(event.target.value as MadeWith)}>
            {Object.entries(MADE_WITH).map(([value, { label }]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {requests.isPending ? (
        <Loading />
      ) : requests.isError ? (
        <ErrorNotice error={requests.error} />
      ) : items.length === 0 ? (
        <p className="empty">
          {filtered
            ? 'No request matches these filters.'
            : 'No request with this project’s keys yet: try one of the examples above. Requests show here within seconds.'}
        </p>
      ) : (
        <div className="table-wrap" role="region" aria-labelledby={ids.heading} tabIndex={0}>
          <table className="table requests-table">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Request</th>
                <th scope="col">Status</th>
                <th scope="col" className="numeric">
                  Duration
                </th>
                <th scope="col">Made with</th>
                <th scope="col">Request ID</th>
              </tr>
            </thead>
            <tbody>
              {items.map((request) => (
                <tr key={request.id}>
                  <td className="nowrap">
                    <time dateTime={request.createdAt}>{requestTime.format(new Date(request.createdAt))}</time>
                  </td>
                  <td className="request-cell">
                    <span className="method">{request.method}</span> <code title={request.route ?? undefined}>{request.path}</code>
                  </td>
                  <td>
                    <span className={statusBadge(request.status)}>{request.status}</span>
                  </td>
                  <td className="numeric nowrap">{formatDuration(request.durationMs)}</td>
                  <td className="nowrap">{AUTH_LABELS[request.auth]}</td>
                  <td>
                    <code className="request-id" title={request.requestId}>
                      {request.requestId}
                    </code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <LoadMore query={requests} />
    </section>
  );
}
