import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client, type SignalDefinition, type WorkflowStartOptions } from '@temporalio/client';
import type { eventArrivedSignal, workflowExecutionWorkflow } from '../../workflows/workflowExecutionWorkflow';
import { ContactIdSearchAttribute, ProjectIdSearchAttribute } from '../../temporal/searchAttributes';
import type { EventForWaitingExecution, ExecutionToStart } from '../../db/automations/executionRepository';

/** The arguments a signal definition carries. */
type SignalArgs<S> = S extends SignalDefinition<infer A> ? A : never;

export const executionWorkflowId = (executionId: string) => `execution-${executionId}`;

/**
 * How an execution's workflow is started, by the API, the worker's trigger listener and the
 * sweep alike: a deterministic id that is never reused, so a start repeated for the same row
 * (a retry, the sweep after a slow start) never runs the execution twice.
 */
export function executionStartOptions(execution: ExecutionToStart, taskQueue: string): WorkflowStartOptions<typeof workflowExecutionWorkflow> {
  return {
    workflowId: executionWorkflowId(execution.id),
    taskQueue,
    // The input's `workflowId` holds the automation's id: its wire name, recorded in histories, stays.
    args: [{ executionId: execution.id, projectId: execution.projectId, workflowId: execution.automationId, contactId: execution.contactId }],
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    typedSearchAttributes: [
      { key: ProjectIdSearchAttribute, value: execution.projectId },
      { key: ContactIdSearchAttribute, value: execution.contactId },
    ],
  };
}

/** A Temporal client and how to bound one call (the API's `within`; the worker's own client needs none). */
export interface ExecutionTemporal {
  client: Client;
  taskQueue: string;
  within?: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** Starts one execution's workflow: true, or false when it was started before (by anyone). */
export async function startExecution(temporal: ExecutionTemporal, execution: ExecutionToStart): Promise<boolean> {
  const call = () =>
    temporal.client.workflow.start<typeof workflowExecutionWorkflow>('workflowExecutionWorkflow', executionStartOptions(execution, temporal.taskQueue));
  try {
    await (temporal.within ? temporal.within(call) : call());
    return true;
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return false;
  }
}

/** Hands an event to a waiting execution. A finished one (not found / completed) needs it no more. */
export async function signalWaitingExecution(temporal: ExecutionTemporal, arrival: EventForWaitingExecution): Promise<void> {
  const handle = temporal.client.workflow.getHandle(executionWorkflowId(arrival.executionId));
  const call = () =>
    handle.signal<SignalArgs<typeof eventArrivedSignal>>('eventArrived', {
      eventId: arrival.eventId,
      name: arrival.name,
      data: arrival.data,
      createdAt: arrival.createdAt,
    });
  try {
    await (temporal.within ? temporal.within(call) : call());
  } catch (err) {
    if ((err as Error)?.name !== 'WorkflowNotFoundError') throw err;
  }
}
