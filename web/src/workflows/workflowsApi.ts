import type { components } from '../../../client/mailroomClient';
import { queryKeys, type InstanceConfig } from '../api/queries';

export type WorkflowSummary = components['schemas']['WorkflowSummary'];
export type Workflow = components['schemas']['Workflow'];
export type Execution = components['schemas']['WorkflowExecutionSummary'];
export type ExecutionStatus = Execution['status'];
export type ExecutionCounts = components['schemas']['WorkflowExecutionCounts'];

/** The workflows' query keys, under the project's, so a write invalidates exactly what it changes. */
export const workflowKeys = {
  all: (projectId: string) => [...queryKeys.project(projectId), 'workflows'] as const,
  list: (projectId: string, page: number) => [...workflowKeys.all(projectId), 'list', page] as const,
  one: (projectId: string, workflowId: string) => [...workflowKeys.all(projectId), 'one', workflowId] as const,
  executions: (projectId: string, workflowId: string) => [...workflowKeys.all(projectId), 'executions', workflowId] as const,
};

/** Every execution status in words; typed by the API's answer, so a new status fails the build until it is named. */
export const EXECUTION_STATUS_LABELS: Record<ExecutionStatus, string> = {
  RUNNING: 'Running',
  WAITING: 'Waiting',
  COMPLETED: 'Completed',
  EXITED: 'Exited',
  FAILED: 'Failed',
  CANCELLED: 'Cancelled',
};

export const ACTIVE_STATUSES: readonly ExecutionStatus[] = ['RUNNING', 'WAITING'];

export function statusBadgeClass(status: ExecutionStatus): string {
  if (status === 'COMPLETED' || status === 'EXITED') return 'badge badge-success';
  if (status === 'FAILED') return 'badge badge-danger';
  if (status === 'RUNNING' || status === 'WAITING') return 'badge wf-badge-active';
  return 'badge';
}

/** "2 running, 1 waiting, 10 completed": the statuses that have executions, in the order above. */
export function countsText(counts: ExecutionCounts): string {
  const parts = (Object.keys(EXECUTION_STATUS_LABELS) as ExecutionStatus[])
    .filter((status) => counts[status] > 0)
    .map((status) => `${counts[status]} ${EXECUTION_STATUS_LABELS[status].toLowerCase()}`);
  return parts.length ? parts.join(', ') : 'None yet';
}

/** The Temporal UI's page of an execution's run (the id is never reused, so it names one run), or null without a UI address. */
export function temporalRunUrl(temporalUi: InstanceConfig['temporalUi'], temporalWorkflowId: string): string | null {
  if (!temporalUi) return null;
  return `${temporalUi.url}/namespaces/${encodeURIComponent(temporalUi.namespace)}/workflows/${encodeURIComponent(temporalWorkflowId)}`;
}
