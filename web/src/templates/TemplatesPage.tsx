import { useId, type FormEvent } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { templateKeys, TYPE_LABELS } from './templatesApi';
import './templates.css';

const PAGE_SIZE = 25;

/** The project's templates (GET /templates), last changed first, searched by name, description or subject (kept in the address). */
export function TemplatesPage() {
  const { project, client } = useCurrentProject();
  const [searchParams, setSearchParams] = useSearchParams();
  const search = searchParams.get('search')?.trim() || undefined;
  const page = Math.max(1, Number.parseInt(searchParams.get('page') ?? '1', 10) || 1);
  const searchId = useId();

  const templates = useQuery({
    queryKey: templateKeys.list(project.id, search, page),
    queryFn: () =>
      unwrap(
        client.GET('/templates', {
          params: { query: { page, pageSize: PAGE_SIZE, sort: 'updatedAt', dir: 'desc', ...(search ? { search } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });

  function go(next: { search?: string; page?: number }) {
    const params = new URLSearchParams();
    const nextSearch = 'search' in next ? next.search : search;
    if (nextSearch) params.set('search', nextSearch);
    if (next.page && next.page > 1) params.set('page', String(next.page));
    setSearchParams(params, { replace: true });
  }
  function submitSearch(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = new FormData(event.currentTarget).get('search');
    go({ search: typeof value === 'string' ? value.trim() || undefined : undefined, page: 1 });
  }

  const data = templates.data;
  return (
    <div className="page">
      <PageTitle parts={['Templates', project.name]} />
      <header className="page-header templates-header">
        <div>
          <h1>Templates</h1>
          <p className="muted">Reusable mail: send one with POST /v1/send’s template, or from a workflow’s Send email step.</p>
        </div>
        <Link className="button button-primary" to="new">
          New template
        </Link>
      </header>
      <section className="card" aria-labelledby="templates-heading">
        <h2 id="templates-heading" className="visually-hidden">
          Templates
        </h2>
        <div className="filters">
          <form role="search" className="filter-search" onSubmit={submitSearch}>
            <label htmlFor={searchId}>Search</label>
            <input id={searchId} name="search" type="search" placeholder="Name or subject" defaultValue={search ?? ''} key={search ?? ''} />
            <button type="submit" className="button">
              Search
            </button>
          </form>
        </div>
        {templates.isPending ? (
          <Loading />
        ) : templates.isError ? (
          <ErrorNotice error={templates.error} />
        ) : data!.data.length === 0 ? (
          search ? (
            <p className="empty">No template matches “{search}”.</p>
          ) : (
            <div className="empty templates-empty">
              <p>No templates yet. A template holds a subject and an HTML body with variables such as {'{{firstName}}'}.</p>
              <Link className="button button-primary" to="new">
                New template
              </Link>
            </div>
          )
        ) : (
          <div className="table-wrap" role="region" aria-labelledby="templates-heading" tabIndex={0} aria-busy={templates.isPlaceholderData || undefined}>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Subject</th>
                  <th scope="col">Type</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {data!.data.map((template) => (
                  <tr key={template.id}>
                    <td>
                      <Link to={template.id}>{template.name}</Link>
                    </td>
                    <td className="truncate">{template.subject}</td>
                    <td>
                      <span className="badge">{TYPE_LABELS[template.type]}</span>
                    </td>
                    <td className="nowrap">{formatDateTime(template.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {data && data.totalPages > 1 ? (
          <nav className="card-actions templates-pages" aria-label="Pages">
            <button type="button" className="button" disabled={page <= 1} onClick={() => go({ page: page - 1 })}>
              Previous page
            </button>
            <span className="muted">
              Page {formatNumber(Math.min(page, data.totalPages))} of {formatNumber(data.totalPages)} ({formatNumber(data.total)} templates)
            </span>
            <button type="button" className="button" disabled={page >= data.totalPages} onClick={() => go({ page: page + 1 })}>
              Next page
            </button>
          </nav>
        ) : null}
      </section>
    </div>
  );
}
