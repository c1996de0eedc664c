/**
 * The one way the API starts a workflow: it waits (briefly) for the start-up setup, gives the
 * call a deadline, tries again while a search attribute is still reaching the namespace's cache
 * (SEARCH_ATTRIBUTE_PROPAGATION_MS), and says whether a failure is worth retrying. An outage is a 503 "try again";
 * a refusal retrying cannot fix (a missing search attribute or namespace, a permission) is a 500
 * whose reason goes to the log, so nobody retries forever against a misconfigured Temporal
 * (api/http/workflowStartErrors.ts says so over HTTP).
 */
import type { WorkflowStartOptions } from '@temporalio/client';
import type * as workflows from '../workflows';
import type { TemporalHandle } from './client';
import { TEMPORAL_CALL_TIMEOUT_MS } from './client';
import { isPermanentTemporalError, isUnknownSearchAttribute, temporalErrorReason } from './temporalErrors';
import { TemporalSetupError } from './waitForTemporal';

export class WorkflowStartError extends Error {
  constructor(
    /** Temporal's own explanation, for the log. */
    readonly reason: string,
    /** True for an outage (try again later), false for a refusal an operator must fix. */
    readonly retryable: boolean,
    override readonly cause: unknown,
  ) {
    super(`could not start the workflow: ${reason}`);
  }
}

/**
 * How long a start refused for a search attribute the namespace does not map yet is tried again.
 * Start-up registers the attributes and waits until its frontend maps them
 * (temporal/namespaceSetup.ts), but a cluster's other frontends learn of them when they refresh
 * their namespace cache (every 10 s by default): a refusal within that time is a propagation
 * delay, not a misconfiguration.
 */
export const SEARCH_ATTRIBUTE_PROPAGATION_MS = 15_000;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The name of a workflow the worker runs (workflows/index.ts). */
export type WorkflowName = keyof typeof workflows;

/**
 * Starts a workflow by its name, with its arguments checked against its definition: callers import
 * the workflow's type only, so starting one loads no workflow code into the API or the services.
 */
export async function startWorkflow<K extends WorkflowName>(
  temporal: TemporalHandle,
  workflowType: K,
  options: WorkflowStartOptions<(typeof workflows)[K]>,
): Promise<void> {
  const firstTryAt = Date.now();
  for (let pauseMs = 250; ; pauseMs = Math.min(pauseMs * 2, 2000)) {
    const deadline = Date.now() + TEMPORAL_CALL_TIMEOUT_MS;
    try {
      await temporal.ready(TEMPORAL_CALL_TIMEOUT_MS);
      await temporal.within(() => temporal.client.workflow.start<(typeof workflows)[K]>(workflowType, options), Math.max(500, deadline - Date.now()));
      return;
    } catch (err) {
      if (isUnknownSearchAttribute(err) && Date.now() + pauseMs - firstTryAt < SEARCH_ATTRIBUTE_PROPAGATION_MS) {
        await delay(pauseMs);
        continue;
      }
      const permanent = err instanceof TemporalSetupError || isPermanentTemporalError(err);
      throw new WorkflowStartError(temporalErrorReason(err), !permanent, err);
    }
  }
}

/** Log fields for a failed start: the reason, and whether retrying could help. */
export function workflowStartLogFields(err: unknown): Record<string, unknown> {
  if (err instanceof WorkflowStartError) return { reason: err.reason, retryable: err.retryable, err: err.cause };
  return { err };
}
