import { useId, type FormEvent } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime } from '../components/format';
import { SOURCE_LABELS, STATUS_LABELS, statusBadgeClass } from './emailLabels';
import { LoadMore } from '../components/LoadMore';

function oneOf<T extends string>(labels: Record<T, string>, value: string | null): T | undefined {
  return value !== null && value in labels ? (value as T) : undefined;
}

/** Every email the project sent or received (GET /emails), newest first, filtered by status, source and recipient (kept in the address). */
export function EmailsPage() {
  const { project, client } = useCurrentProject();
  const [searchParams, setSearchParams] = useSearchParams();
  const status = oneOf(STATUS_LABELS, searchParams.get('status'));
  const source = oneOf(SOURCE_LABELS, searchParams.get('source'));
  const to = searchParams.get('to')?.trim() || undefined;
  const ids = { status: useId(), source: useId(), to: useId() };

  const emails = useInfiniteQuery({
    queryKey: [...queryKeys.project(project.id), 'emails', { status, source, to }],
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/emails', {
          params: {
            query: {
              limit: '50',
              ...(status ? { status } : {}),
              ...(source ? { source } : {}),
              ...(to ? { to } : {}),
              ...(pageParam ? { cursor: pageParam } : {}),
            },
          },
        }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
  });
  const items = emails.data?.pages.flatMap((page) => page.data) ?? [];

  function setFilter(name: string, value: string | undefined) {
    const next = new URLSearchParams(searchParams);
    if (value) next.set(name, value);
    else next.delete(name);
    setSearchParams(next, { replace: true });
  }
  function search(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = new FormData(event.currentTarget).get('to');
    setFilter('to', typeof value === 'string' ? value.trim() : undefined);
  }

  return (
    <div className="page">
      <PageTitle parts={['Emails', project.name]} />
      <header className="page-header">
        <h1>Emails</h1>
        <p className="muted">Every email the project sent or received, newest first.</p>
      </header>
      <section className="card" aria-labelledby="emails-heading">
        <h2 id="emails-heading" className="visually-hidden">
          Emails
        </h2>
        <div className="filters">
          <form role="search" className="filter-search" onSubmit={search}>
            <label htmlFor={ids.to}>Search</label>
            <input id={ids.to} name="to" type="search" placeholder="Recipient address" defaultValue={to ?? ''} key={to ?? ''} />
            <button type="submit" className="button">
              Search
            </button>
          </form>
          <div className="field field-inline">
            <label htmlFor={ids.status}>Status</label>
            <select id={ids.status} value={status ?? ''} onChange={(event) => setFilter('status', event.target.value)}>
              <option value="">Any</option>
              {Object.entries(STATUS_LABELS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <div className="field field-inline">
            <label htmlFor={ids.source}>Source</label>
            <select id={ids.source} value={source ?? ''} onChange={(event) => setFilter('source', event.target.value)}>
              <option value="">Any</option>
              {Object.entries(SOURCE_LABELS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </div>
        </div>
        {emails.isPending ? (
          <Loading />
        ) : emails.isError ? (
          <ErrorNotice error={emails.error} />
        ) : items.length === 0 ? (
          <p className="empty">{status || source || to ? 'No email matches these filters.' : 'No email yet: send one with POST /v1/send.'}</p>
        ) : (
          <div className="table-wrap" role="region" aria-labelledby="emails-heading" tabIndex={0}>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Date</th>
                  <th scope="col">To</th>
                  <th scope="col">Subject</th>
                  <th scope="col">Source</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {items.map((email) => (
                  <tr key={email.id}>
                    <td className="nowrap">{formatDateTime(email.createdAt)}</td>
                    <td>{email.to}</td>
                    <td className="truncate">
                      <Link to={email.id}>{email.subject || '(no subject)'}</Link>
                    </td>
                    <td>{SOURCE_LABELS[email.source]}</td>
                    <td>
                      <span className={statusBadgeClass(email.status)}>{STATUS_LABELS[email.status]}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <LoadMore query={emails} />
      </section>
    </div>
  );
}
