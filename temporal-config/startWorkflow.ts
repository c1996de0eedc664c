/**
 * The one way the API starts a workflow: it waits (briefly) for the start-up setup, gives the
 * call a deadline, and says whether a failure is worth retrying. An outage is a 503 "try again";
 * a refusal retrying cannot fix (a missing search attribute or namespace, a permission) is a 500
 * whose reason goes to the log, so nobody retries forever against a misconfigured Temporal.
 */
import type { Workflow, WorkflowStartOptions } from '@temporalio/client';
import { ApiError } from '../api/http/errors';
import type { TemporalHandle } from './client';
import { TEMPORAL_CALL_TIMEOUT_MS } from './client';
import { isPermanentTemporalError, temporalErrorReason } from './temporalErrors';
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

export async function startWorkflow<T extends Workflow>(temporal: TemporalHandle, workflow: T, options: WorkflowStartOptions<T>): Promise<void> {
  const deadline = Date.now() + TEMPORAL_CALL_TIMEOUT_MS;
  try {
    await temporal.ready(TEMPORAL_CALL_TIMEOUT_MS);
    await temporal.within(() => temporal.client.workflow.start(workflow, options), Math.max(500, deadline - Date.now()));
  } catch (err) {
    const permanent = err instanceof TemporalSetupError || isPermanentTemporalError(err);
    throw new WorkflowStartError(temporalErrorReason(err), !permanent, err);
  }
}

/** The HTTP answer for a failed start: 503 with `retryMessage` for an outage, else a 500. */
export function workflowStartApiError(err: unknown, retryMessage: string): ApiError {
  if (err instanceof WorkflowStartError && !err.retryable) {
    return new ApiError(
      500,
      'INTERNAL_SERVER_ERROR',
      'Temporal refused to start the workflow; the server operator must fix the Temporal setup (the reason is in the API log)',
    );
  }
  return new ApiError(503, 'SERVICE_UNAVAILABLE', retryMessage);
}

/** Log fields for a failed start: the reason, and whether retrying could help. */
export function workflowStartLogFields(err: unknown): Record<string, unknown> {
  if (err instanceof WorkflowStartError) return { reason: err.reason, retryable: err.retryable, err: err.cause };
  return { err };
}
