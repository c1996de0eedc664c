import { useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatNumber } from '../components/format';
import { countsText, workflowKeys } from './workflowsApi';
import './workflows.css';

const PAGE_SIZE = 25;
/** How often the list is read again while some workflow has executions running or waiting (contract 21: at most 5 s). */
const LIVE_MS = 5000;

/** The project's workflows: name, trigger, enabled, steps and executions by status (live while any run). */
export function WorkflowsPage() {
  const { project, client } = useCurrentProject();
  const [page, setPage] = useState(1);
  const workflows = useQuery({
    queryKey: workflowKeys.list(project.id, page),
    queryFn: () => unwrap(client.GET('/workflows', { params: { query: { page, pageSize: PAGE_SIZE, sort: 'name', dir: 'asc' } } })),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some((w) => w.executionCounts.RUNNING + w.executionCounts.WAITING > 0) ? LIVE_MS : false),
  });
  const totalPages = workflows.data?.totalPages ?? 0;
  return (
    <div className="page">
      <PageTitle parts={['Workflows', project.name]} />
      <header className="page-header">
        <h1>Workflows</h1>
        <p className="muted">Automations started by a tracked event: their steps, whether they run, and their executions.</p>
      </header>
      <section className="card" aria-labelledby="workflows-heading">
        <h2 id="workflows-heading" className="visually-hidden">
          All workflows
        </h2>
        {workflows.isPending ? (
          <Loading />
        ) : workflows.isError ? (
          <ErrorNotice error={workflows.error} />
        ) : workflows.data.data.length === 0 ? (
          <p className="empty">
            No workflows yet. Create one through the API (<code>POST /workflows</code>, then its steps and transitions); it is listed here to enable and watch.
          </p>
        ) : (
          <div className="table-wrap wf-table-wrap" role="region" aria-labelledby="workflows-heading" tabIndex={0}>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="wf-numeric">
                    Steps
                  </th>
                  <th scope="col">Executions</th>
                </tr>
              </thead>
              <tbody>
                {workflows.data.data.map((workflow) => (
                  <tr key={workflow.id}>
                    <td>
                      <Link to={workflow.id}>{workflow.name}</Link>
                      {workflow.description ? <span className="wf-description">{workflow.description}</span> : null}
                    </td>
                    <td>
                      <code className="wf-event">{workflow.triggerConfig.eventName}</code>
                    </td>
                    <td>
                      <span className={workflow.enabled ? 'badge badge-success' : 'badge'}>{workflow.enabled ? 'Enabled' : 'Disabled'}</span>
                    </td>
                    <td className="wf-numeric">{formatNumber(workflow.stepCount)}</td>
                    <td>{countsText(workflow.executionCounts)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {totalPages > 1 ? (
          <nav className="wf-pager" aria-label="Workflow pages">
            <button type="button" className="button button-small" onClick={() => setPage((p) => p - 1)} disabled={page <= 1}>
              Previous page
            </button>
            <span className="muted">
              Page {page} of {totalPages}
            </span>
            <button type="button" className="button button-small" onClick={() => setPage((p) => p + 1)} disabled={page >= totalPages}>
              Next page
            </button>
          </nav>
        ) : null}
      </section>
    </div>
  );
}
