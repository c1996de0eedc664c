import { useId } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { ActivityTable, TYPE_LABELS, type ActivityItem } from './ActivityTable';
import { LoadMore } from '../components/LoadMore';

const TYPES = Object.keys(TYPE_LABELS) as ActivityItem['type'][];

function isActivityType(value: string | null): value is ActivityItem['type'] {
  return value !== null && (TYPES as string[]).includes(value);
}

/** The project's activity feed (GET /activity), newest first, filtered by type (kept in the address), a page at a time. */
export function ActivityPage() {
  const { project, client } = useCurrentProject();
  const [searchParams, setSearchParams] = useSearchParams();
  const typeParam = searchParams.get('type');
  const type = isActivityType(typeParam) ? typeParam : undefined;
  const filterId = useId();
  const feed = useInfiniteQuery({
    queryKey: [...queryKeys.project(project.id), 'activity', 'feed', type ?? 'all'],
    queryFn: ({ pageParam }) =>
      unwrap(client.GET('/activity', { params: { query: { limit: '50', ...(type ? { types: type } : {}), ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
    // New activity shows without a reload (the pages loaded are asked again).
    refetchInterval: 15_000,
  });
  const items = feed.data?.pages.flatMap((page) => page.data) ?? [];

  return (
    <div className="page">
      <PageTitle parts={['Activity', project.name]} />
      <header className="page-header">
        <h1>Activity</h1>
        <p className="muted">Events, emails, subscriptions, campaigns and workflow runs of the last 30 days, newest first.</p>
      </header>
      <section className="card" aria-labelledby="feed-heading">
        <div className="card-header">
          <h2 id="feed-heading">Feed</h2>
          <div className="field field-inline">
            <label htmlFor={filterId}>Type</label>
            <select
              id={filterId}
              value={type ?? ''}
              onChange={(event) => setSearchParams(event.target.value ? { type: event.target.value } : {}, { replace: true })}
            >
              <option value="">All activity</option>
              {TYPES.map((value) => (
                <option key={value} value={value}>
                  {TYPE_LABELS[value]}
                </option>
              ))}
            </select>
          </div>
        </div>
        {feed.isPending ? (
          <Loading />
        ) : feed.isError ? (
          <ErrorNotice error={feed.error} />
        ) : (
          <>
            <ActivityTable
              items={items}
              labelledBy="feed-heading"
              empty={type ? 'No activity of this type in the last 30 days.' : 'No activity in the last 30 days.'}
            />
            <LoadMore query={feed} />
          </>
        )}
      </section>
    </div>
  );
}
