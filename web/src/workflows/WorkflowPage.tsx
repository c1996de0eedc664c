import { useId, useMemo, useState } from 'react';
import { keepPreviousData, useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { ApiError, unwrap } from '../api/client';
import { configQuery, type InstanceConfig } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { workflowStepList, type StepEntry } from './workflowSteps';
import {
  ACTIVE_STATUSES,
  EXECUTION_STATUS_LABELS,
  statusBadgeClass,
  temporalRunUrl,
  workflowKeys,
  type Execution,
  type ExecutionStatus,
  type Workflow,
} from './workflowsApi';
import './workflows.css';

const PAGE_SIZE = 25;
/** How often executions are read again while any runs or waits (contract 21: at most 5 s). */
const LIVE_MS = 3000;
/** How often an enabled workflow with nothing running is asked whether an execution started. */
const IDLE_MS = 5000;

/** One workflow: its trigger, Enable/Disable, its steps as a readable list, its executions live, cancel one or all, each one's run in the Temporal UI. */
export function WorkflowPage() {
  const { workflowId = '' } = useParams();
  const { project, client } = useCurrentProject();
  const workflow = useQuery({
    queryKey: workflowKeys.one(project.id, workflowId),
    queryFn: () => unwrap(client.GET('/workflows/{id}', { params: { path: { id: workflowId } } })),
  });
  if (workflow.isPending) {
    return (
      <div className="page">
        <Loading />
      </div>
    );
  }
  if (workflow.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Workflow', project.name]} />
        <p className="wf-breadcrumb">
          <Link to=".." relative="path">
            Workflows
          </Link>
        </p>
        <h1>Workflow</h1>
        <ErrorNotice error={workflow.error} />
      </div>
    );
  }
  return <WorkflowDetail workflow={workflow.data} />;
}

function WorkflowDetail({ workflow }: { workflow: Workflow }) {
  const { project, client } = useCurrentProject();
  // SEND_EMAIL steps are listed with their templates' names.
  const templateIds = [...new Set(workflow.steps.flatMap((step) => (step.type === 'SEND_EMAIL' && step.templateId ? [step.templateId] : [])))];
  const templates = useQueries({
    queries: templateIds.map((id) => ({
      queryKey: [...workflowKeys.all(project.id), 'template', id],
      queryFn: () => unwrap(client.GET('/templates/{id}', { params: { path: { id } } })),
      staleTime: 60_000,
    })),
  });
  const templateNames = new Map(templates.flatMap((t) => (t.data ? [[t.data.id, t.data.name] as const] : [])));
  const steps = workflowStepList(workflow, templateNames);
  const stepNames = new Map(workflow.steps.map((step) => [step.id, step.name]));
  return (
    <div className="page">
      <PageTitle parts={[workflow.name, 'Workflows', project.name]} />
      <p className="wf-breadcrumb">
        <Link to=".." relative="path">
          Workflows
        </Link>
      </p>
      <header className="page-header">
        <h1>{workflow.name}</h1>
        <p className="wf-badges">
          <span className={workflow.enabled ? 'badge badge-success' : 'badge'}>{workflow.enabled ? 'Enabled' : 'Disabled'}</span>
        </p>
        {workflow.description ? <p className="muted">{workflow.description}</p> : null}
      </header>
      <TriggerCard workflow={workflow} stepNames={stepNames} />
      <section className="card" aria-labelledby="steps-heading">
        <h2 id="steps-heading">Steps</h2>
        <p className="muted">In the order an execution meets them; the graph editor comes later.</p>
        <StepList steps={steps} />
      </section>
      <ExecutionsCard workflow={workflow} stepNames={stepNames} />
    </div>
  );
}

function TriggerCard({ workflow, stepNames }: { workflow: Workflow; stepNames: Map<string, string> }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const toggle = useMutation({
    mutationFn: (enabled: boolean) => unwrap(client.PATCH('/workflows/{id}', { params: { path: { id: workflow.id } }, body: { enabled } })),
    onSuccess: (updated) => {
      queryClient.setQueryData(workflowKeys.one(project.id, workflow.id), updated);
      return queryClient.invalidateQueries({ queryKey: workflowKeys.all(project.id) });
    },
  });
  const graphErrors = toggle.error instanceof ApiError ? toggle.error.fieldErrors : [];
  /** A problem's field is `steps.<id>` or `transitions.<id>`: named by the step where there is one. */
  const where = (field: string) => {
    const [kind, id] = field.split('.');
    if (kind === 'steps' && id) return stepNames.get(id) ?? 'A step';
    if (kind === 'transitions') return 'A transition';
    return 'The workflow';
  };
  return (
    <section className="card" aria-labelledby="trigger-heading">
      <h2 id="trigger-heading">Trigger</h2>
      <dl className="wf-facts">
        <div>
          <dt>Starts on the event</dt>
          <dd>
            <code className="wf-event">{workflow.triggerConfig.eventName}</code>
          </dd>
        </div>
        <div>
          <dt>Re-entry</dt>
          <dd>{workflow.allowReentry ? 'A contact may enter again' : 'A contact enters once'}</dd>
        </div>
        <div>
          <dt>First execution</dt>
          <dd>{workflow.firstExecutionAt ? formatDateTime(workflow.firstExecutionAt) : 'Not run yet'}</dd>
        </div>
      </dl>
      {!workflow.enabled && workflow.problems.length && !toggle.error ? (
        <div className="notice notice-warning wf-problems">
          <p className="notice-title">What stops this workflow from running</p>
          <ul>
            {workflow.problems.map((problem) => (
              <li key={`${problem.kind}-${problem.stepId ?? problem.transitionId ?? ''}`}>{problem.message}</li>
            ))}
          </ul>
        </div>
      ) : null}
      {toggle.error ? (
        <div className="wf-toggle-error">
          <ErrorNotice error={toggle.error} title={workflow.enabled ? 'The workflow could not be disabled' : 'The workflow cannot be enabled'} />
          {graphErrors.length ? (
            <ul className="wf-graph-errors" aria-label="Graph errors">
              {graphErrors.map((error) => (
                <li key={`${error.field}-${error.message}`}>
                  <strong>{where(error.field)}:</strong> {error.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      <div className="form-actions card-actions">
        {workflow.enabled ? (
          <button type="button" className="button" onClick={() => toggle.mutate(false)} disabled={toggle.isPending} aria-busy={toggle.isPending || undefined}>
            Disable
          </button>
        ) : (
          <button
            type="button"
            className="button button-primary"
            onClick={() => toggle.mutate(true)}
            disabled={toggle.isPending}
            aria-busy={toggle.isPending || undefined}
          >
            Enable
          </button>
        )}
        <span className="muted">{workflow.enabled ? 'New events start executions.' : 'No execution starts while disabled.'}</span>
      </div>
    </section>
  );
}

function StepList({ steps }: { steps: StepEntry[] }) {
  if (steps.length <= 1) return <p className="empty">Only the trigger so far: add steps and transitions through the API.</p>;
  return (
    <ol className="wf-steps">
      {steps.map((step) => (
        <li key={step.id} className={step.reachable ? 'wf-step' : 'wf-step wf-step-unreachable'}>
          <span className="wf-step-number" aria-hidden="true">
            {step.number}
          </span>
          <div className="wf-step-body">
            <p className="wf-step-title">
              <span className="visually-hidden">Step {step.number}: </span>
              <strong>{step.name}</strong> <span className="badge">{step.kind}</span>
              {step.reachable ? null : <span className="badge badge-danger">Not reached from the trigger</span>}
            </p>
            <p className="wf-step-summary">{step.summary}</p>
            <p className="wf-step-next muted">
              {step.next.length === 0
                ? step.type === 'EXIT'
                  ? 'The execution ends here.'
                  : 'Then the execution ends.'
                : step.next.map((link, index) => (
                    <span key={`${link.toNumber}-${index}`} className="wf-step-link">
                      {link.label ? `${link.label}: ` : 'Then: '}
                      {link.toNumber}. {link.toName}
                    </span>
                  ))}
            </p>
          </div>
        </li>
      ))}
    </ol>
  );
}

function ExecutionsCard({ workflow, stepNames }: { workflow: Workflow; stepNames: Map<string, string> }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const config = useQuery(configQuery);
  const statusId = useId();
  const [status, setStatus] = useState<ExecutionStatus | ''>('');
  const [page, setPage] = useState(1);
  const [cancelling, setCancelling] = useState<Execution | 'all' | null>(null);
  const executionsKey = workflowKeys.executions(project.id, workflow.id);

  const counts = useQuery({
    queryKey: [...executionsKey, 'counts'],
    queryFn: () => unwrap(client.GET('/workflows/{id}/executions/counts', { params: { path: { id: workflow.id } } })),
    // While executions run, and while the workflow is enabled (a tracked event may start one at any moment).
    refetchInterval: (query) => (query.state.data && query.state.data.RUNNING + query.state.data.WAITING > 0 ? LIVE_MS : workflow.enabled ? IDLE_MS : false),
  });
  const active = counts.data ? counts.data.RUNNING + counts.data.WAITING : 0;
  const executions = useQuery({
    queryKey: [...executionsKey, 'list', status, page],
    queryFn: () =>
      unwrap(
        client.GET('/workflows/{id}/executions', {
          params: { path: { id: workflow.id }, query: { page, pageSize: PAGE_SIZE, ...(status ? { status } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: (query) =>
      active > 0 || query.state.data?.data.some((e) => ACTIVE_STATUSES.includes(e.status)) ? LIVE_MS : workflow.enabled ? IDLE_MS : false,
  });

  const cancel = useMutation({
    mutationFn: async (target: Execution | 'all') => {
      if (target === 'all') {
        const result = await unwrap(client.POST('/workflows/{id}/executions/cancel-all', { params: { path: { id: workflow.id } } }));
        return `${formatNumber(result.cancelled)} execution${result.cancelled === 1 ? '' : 's'} cancelled.`;
      }
      await unwrap(client.DELETE('/workflows/{id}/executions/{executionId}', { params: { path: { id: workflow.id, executionId: target.id } } }));
      return 'The execution was cancelled.';
    },
    onSettled: async () => {
      setCancelling(null);
      await queryClient.invalidateQueries({ queryKey: workflowKeys.all(project.id) });
    },
  });

  const statusOptions = useMemo(
    () =>
      (Object.keys(EXECUTION_STATUS_LABELS) as ExecutionStatus[]).map((value) => ({
        value,
        label: counts.data ? `${EXECUTION_STATUS_LABELS[value]} (${formatNumber(counts.data[value])})` : EXECUTION_STATUS_LABELS[value],
      })),
    [counts.data],
  );
  const total = counts.data ? Object.values(counts.data).reduce((sum, n) => sum + n, 0) : 0;
  const totalPages = executions.data?.totalPages ?? 0;

  return (
    <section className="card" aria-labelledby="executions-heading">
      <div className="card-header">
        <h2 id="executions-heading">Executions</h2>
        {active > 0 ? (
          <button type="button" className="button button-danger" onClick={() => setCancelling('all')}>
            Cancel all executions
          </button>
        ) : null}
      </div>
      {counts.isError ? <ErrorNotice error={counts.error} /> : null}
      {counts.data ? (
        <dl className="wf-counts">
          {(Object.keys(EXECUTION_STATUS_LABELS) as ExecutionStatus[]).map((value) => (
            <div key={value}>
              <dt>{EXECUTION_STATUS_LABELS[value]}</dt>
              <dd>{formatNumber(counts.data[value])}</dd>
            </div>
          ))}
        </dl>
      ) : null}
      <p role="status" className="wf-live muted">
        {active > 0 ? `${formatNumber(active)} running or waiting; updated every ${LIVE_MS / 1000} seconds.` : total > 0 ? 'No execution is running.' : ''}
      </p>
      {cancel.error ? <ErrorNotice error={cancel.error} /> : null}
      {cancel.data && !cancel.isPending ? <p className="wf-done">{cancel.data}</p> : null}
      <div className="filters">
        <div className="field field-inline">
          <label htmlFor={statusId}>Status</label>
          <select
            id={statusId}
            value={status}
            onChange={(event) => {
              setStatus(event.target.value as ExecutionStatus | '');
              setPage(1);
            }}
          >
            <option value="">Any</option>
            {statusOptions.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {executions.isPending ? (
        <Loading />
      ) : executions.isError ? (
        <ErrorNotice error={executions.error} />
      ) : executions.data.data.length === 0 ? (
        <p className="empty">
          {status
            ? `No ${EXECUTION_STATUS_LABELS[status].toLowerCase()} execution.`
            : `No execution yet: one starts when the event ${workflow.triggerConfig.eventName} is tracked while the workflow is enabled.`}
        </p>
      ) : (
        <div className="table-wrap wf-table-wrap" role="region" aria-labelledby="executions-heading" tabIndex={0}>
          <table className="table wf-executions">
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Contact</th>
                <th scope="col">Status</th>
                <th scope="col">Current step</th>
                <th scope="col">Temporal run</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {executions.data.data.map((execution) => (
                <ExecutionRow
                  key={execution.id}
                  execution={execution}
                  stepNames={stepNames}
                  temporalUi={config.data?.temporalUi ?? null}
                  onCancel={() => setCancelling(execution)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {totalPages > 1 ? (
        <nav className="wf-pager" aria-label="Execution pages">
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
      <ConfirmDialog
        open={cancelling !== null}
        title={cancelling === 'all' ? 'Cancel every running execution?' : 'Cancel this execution?'}
        confirmLabel={cancelling === 'all' ? 'Cancel all executions' : 'Cancel execution'}
        busy={cancel.isPending}
        onConfirm={() => cancelling && cancel.mutate(cancelling)}
        onCancel={() => setCancelling(null)}
      >
        <p>
          {cancelling === 'all'
            ? `Every running or waiting execution of ${workflow.name} (${formatNumber(active)}) stops where it is, and its Temporal run is cancelled. Their contacts get no further step.`
            : 'The execution stops where it is and its Temporal run is cancelled; its contact gets no further step. It cannot be resumed.'}
        </p>
      </ConfirmDialog>
    </section>
  );
}

/** Where an execution is: its current step, and what it waits for. */
function currentStepText(execution: Execution, stepNames: Map<string, string>): string {
  const step = execution.currentStepId ? (stepNames.get(execution.currentStepId) ?? 'A deleted step') : null;
  if (execution.status === 'WAITING') {
    const what = execution.waitingForEvent
      ? `waiting for ${execution.waitingForEvent}${execution.waitUntil ? ` until ${formatDateTime(execution.waitUntil)}` : ''}`
      : execution.waitUntil
        ? `waiting until ${formatDateTime(execution.waitUntil)}`
        : 'waiting';
    return step ? `${step} (${what})` : what;
  }
  if (execution.status === 'RUNNING') return step ?? 'Starting';
  return execution.error ?? execution.exitReason ?? step ?? '—';
}

function ExecutionRow({
  execution,
  stepNames,
  temporalUi,
  onCancel,
}: {
  execution: Execution;
  stepNames: Map<string, string>;
  temporalUi: InstanceConfig['temporalUi'];
  onCancel: () => void;
}) {
  const runUrl = temporalRunUrl(temporalUi, execution.temporalWorkflowId);
  const isActive = ACTIVE_STATUSES.includes(execution.status);
  return (
    <tr>
      <td className="nowrap">{formatDateTime(execution.startedAt)}</td>
      <td>
        <Link to={`../../contacts/${execution.contactId}`} relative="path" className={execution.contactEmail ? 'wf-contact' : 'wf-contact wf-contact-id'}>
          {execution.contactEmail ?? execution.contactId}
        </Link>
      </td>
      <td>
        <span className={statusBadgeClass(execution.status)}>{EXECUTION_STATUS_LABELS[execution.status]}</span>
      </td>
      <td className="wf-current-step">{currentStepText(execution, stepNames)}</td>
      <td>
        {runUrl ? (
          <a href={runUrl} target="_blank" rel="noreferrer">
            Open in Temporal UI<span className="visually-hidden"> ({execution.temporalWorkflowId})</span>
          </a>
        ) : (
          <span className="wf-run-id">
            <code>{execution.temporalWorkflowId}</code>
            <CopyButton value={execution.temporalWorkflowId} what="workflow id" />
          </span>
        )}
      </td>
      <td className="cell-actions">
        {isActive ? (
          <button type="button" className="button button-small" aria-label={`Cancel execution ${execution.temporalWorkflowId}`} onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </td>
    </tr>
  );
}
