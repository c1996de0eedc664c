import { WorkflowFailedError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { eventually } from './eventually';
import type { TestStack } from './testStack';

/**
 * Facts about Temporal runs, for tests that prove an absence ("no mail was sent", "nothing else
 * happened"): instead of sleeping and hoping the late thing would have shown up by then, they wait
 * until the runs that could have done it have closed, after which nothing more can come of them.
 */

/** Every run (open or closed) a visibility query matches. */
export async function listRuns(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const run of client.workflow.list({ query })) runs.push(run);
  return runs;
}

/**
 * Waits until at least `atLeast` runs match `query` and none of them is still running, and returns
 * them. Visibility lags behind starts, so without `atLeast` a run just started can be missed: pass
 * the number of runs the caller knows it caused.
 */
export async function runsClosed(client: Client, query: string, options: { atLeast?: number; timeoutMs?: number } = {}): Promise<WorkflowExecutionInfo[]> {
  const atLeast = options.atLeast ?? 0;
  return eventually(
    async () => {
      const runs = await listRuns(client, query);
      if (runs.length < atLeast) throw new Error(`${runs.length} of at least ${atLeast} runs visible for ${query}`);
      const open = runs.filter((r) => r.status.name === 'RUNNING');
      if (open.length) throw new Error(`still running: ${open.map((r) => r.workflowId).join(', ')}`);
      return runs;
    },
    options.timeoutMs ?? 30_000,
    100,
  );
}

/**
 * Waits until the latest run of each workflow id has closed (completed, failed, cancelled, timed
 * out). By id, so no visibility lag: a run that was started is found.
 */
export async function workflowsClosed(client: Client, workflowIds: Iterable<string>): Promise<void> {
  await Promise.all(
    [...new Set(workflowIds)].map(async (id) => {
      try {
        await client.workflow.getHandle(id).result();
      } catch (err) {
        if (!(err instanceof WorkflowFailedError)) throw err;
      }
    }),
  );
}

/**
 * Waits until every delivery workflow of a project's recorded emails (their delivery_workflow_id:
 * send-<emailId>, deliver-<emailId>) has closed: after that, none of them sends anything more.
 * /v1/send answers once its emails are committed and starts their delivery a moment later (or the
 * delivery sweep does, within 30 s), so a recorded id may name a run not started yet: it is waited
 * for first.
 */
export async function projectDeliveriesClosed(stack: TestStack, projectId: string): Promise<void> {
  const rows = await stack.orm.em
    .fork()
    .execute<Array<{ id: string }>>(`select distinct delivery_workflow_id as id from emails where project_id = ? and delivery_workflow_id is not null`, [
      projectId,
    ]);
  const ids = rows.map((r) => r.id);
  await eventually(() => Promise.all(ids.map((id) => stack.temporal.workflow.getHandle(id).describe())), 45_000, 100);
  await workflowsClosed(stack.temporal, ids);
}

export interface ScheduledRun<T> {
  workflowId: string;
  runId: string;
  /** When the schedule took the action (Temporal's clock). */
  takenAt: Date;
  result: T;
}

/**
 * Triggers a schedule once and waits for the run it started to close: the schedule's action count
 * grows past what it was before the trigger, and the newest of its recent actions is that run (or
 * one the schedule started even later, which saw at least as much). Returns the run's result.
 */
export async function triggerScheduleRun<T>(client: Client, scheduleId: string, timeoutMs = 60_000): Promise<ScheduledRun<T>> {
  const schedule = client.schedule.getHandle(scheduleId);
  const before = (await schedule.describe()).info.numActionsTaken;
  await schedule.trigger();
  const action = await eventually(
    async () => {
      const { info } = await schedule.describe();
      if (info.numActionsTaken <= before) throw new Error(`schedule ${scheduleId} has not taken the triggered action yet`);
      return info.recentActions[info.recentActions.length - 1];
    },
    timeoutMs,
    100,
  );
  const { workflowId, firstExecutionRunId: runId } = action.action.workflow;
  const result = (await client.workflow.getHandle(workflowId, runId).result()) as T;
  return { workflowId, runId, takenAt: action.takenAt, result };
}

/**
 * Waits until none of the stack's in-process workers is running an activity. An activity whose
 * run has closed (a cancelled run does not wait for its activities) goes on until it notices; once
 * it has returned, and with its run closed, nothing starts it again.
 */
export async function activitiesFinished(stack: TestStack, timeoutMs = 30_000): Promise<void> {
  await eventually(
    () => {
      const running = stack.workers.reduce((n, w) => n + w.getStatus().numInFlightNonLocalActivities, 0);
      if (running) throw new Error(`${running} activities still running`);
      return true;
    },
    timeoutMs,
    50,
  );
}
